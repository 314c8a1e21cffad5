# include: ../_shared/is_true.sh
# include: ../_shared/derived_port.sh
export HOME="$PWD" SteamAppId=892970 LD_LIBRARY_PATH="$PWD/linux64:${LD_LIBRARY_PATH:-}"
public=0
if is_true {{PUBLIC}}; then public=1; fi
set --
if is_true {{CROSSPLAY}}; then set -- -crossplay; fi
port={{SERVER_PORT}}
# Valheim answers Steam's queries on the game port + 1; it takes no other port for them.
derived_port query {{PORT_QUERY}} "$((port + 1))"
exec ./valheim_server.x86_64 -nographics -batchmode -name {{SERVER_NAME}} \
    -port "$port" -world {{WORLD_NAME}} -password {{SERVER_PASSWORD}} \
    -public "$public" -savedir "$PWD/saves" "$@"
