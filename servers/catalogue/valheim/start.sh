# include: ../_shared/is_true.sh
export HOME="$PWD" SteamAppId=892970 LD_LIBRARY_PATH="$PWD/linux64:${LD_LIBRARY_PATH:-}"
public=0
if is_true {{PUBLIC}}; then public=1; fi
set --
if is_true {{CROSSPLAY}}; then set -- -crossplay; fi
# Valheim also listens on port+1 (Steam query).
exec ./valheim_server.x86_64 -nographics -batchmode -name {{SERVER_NAME}} \
    -port {{SERVER_PORT}} -world {{WORLD_NAME}} -password {{SERVER_PASSWORD}} \
    -public "$public" -savedir "$PWD/saves" "$@"
