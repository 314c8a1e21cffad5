# include: ../_shared/oneline.sh
# include: ../_shared/json.sh
name={{SERVER_NAME}}
description={{SERVER_DESCRIPTION}}
password={{GAME_PASSWORD}}
user={{FACTORIO_USERNAME}}
token={{FACTORIO_TOKEN}}
players={{MAX_PLAYERS}}
save=$(oneline {{SAVE_NAME}} | tr -c 'A-Za-z0-9_-' '_')
# Listed on the public server browser only with a factorio.com account and its token.
public=false
if [ -n "$user" ] && [ -n "$token" ]; then public=true; fi
{
    printf '{\n'
    printf '  "name": %s,\n' "$(json "$name")"
    printf '  "description": %s,\n' "$(json "$description")"
    printf '  "tags": [],\n'
    printf '  "max_players": %s,\n' "$players"
    printf '  "visibility": {"public": %s, "lan": true},\n' "$public"
    printf '  "username": %s,\n' "$(json "$user")"
    printf '  "token": %s,\n' "$(json "$token")"
    printf '  "game_password": %s,\n' "$(json "$password")"
    printf '  "require_user_verification": true,\n'
    printf '  "allow_commands": "admins-only",\n'
    printf '  "autosave_interval": 10,\n'
    printf '  "autosave_slots": 5,\n'
    printf '  "auto_pause": true,\n'
    printf '  "autosave_only_on_server": true\n'
    printf '}\n'
} > server-settings.json
if [ ! -f "saves/$save.zip" ]; then
    ./bin/x64/factorio --create "saves/$save.zip"
fi
exec ./bin/x64/factorio --bind {{SERVER_IP}} --port {{SERVER_PORT}} \
    --server-settings server-settings.json --start-server "saves/$save.zip"
