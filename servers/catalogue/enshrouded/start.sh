# include: ../_shared/wine-env.sh
# include: ../_shared/oneline.sh
# include: ../_shared/json.sh
name={{SERVER_NAME}}
password={{SERVER_PASSWORD}}
ip={{SERVER_IP}}
port={{SERVER_PORT}}
query={{PORT_QUERY}}
players={{MAX_PLAYERS}}
# The game port and the Steam query port.
{
    printf '{\n'
    printf '  "name": %s,\n' "$(json "$name")"
    printf '  "saveDirectory": "./savegame",\n'
    printf '  "logDirectory": "./logs",\n'
    printf '  "ip": %s,\n' "$(json "$ip")"
    printf '  "gamePort": %s,\n' "$port"
    printf '  "queryPort": %s,\n' "$query"
    printf '  "slotCount": %s,\n' "$players"
    printf '  "userGroups": [{"name": "Default", "password": %s, ' "$(json "$password")"
    printf '"canKickBan": false, "canAccessInventories": true, "canEditBase": true, '
    printf '"canExtendBase": true, "reservedSlots": 0}]\n'
    printf '}\n'
} > enshrouded_server.json
# The game logs to logs/enshrouded_server.log only: follow it for the console and the ready line.
mkdir -p logs
: > logs/enshrouded_server.log
tail -n +1 -F logs/enshrouded_server.log 2>/dev/null &
# include: ../_shared/end-follower.sh
exec wine ./enshrouded_server.exe
