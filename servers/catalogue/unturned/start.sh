export HOME="$PWD"
# include: ../_shared/oneline.sh
# include: ../_shared/derived_port.sh
export LD_LIBRARY_PATH="$PWD/linux64:${LD_LIBRARY_PATH:-}"
name=$(oneline {{SERVER_NAME}})
password=$(oneline {{SERVER_PASSWORD}})
map=$(oneline {{MAP}})
gslt={{GSLT}}
ip={{SERVER_IP}}
port={{SERVER_PORT}}
players={{MAX_PLAYERS}}
commands=Servers/main/Server/Commands.dat
mkdir -p Servers/main/Server
# Unturned answers Steam's queries on the game port + 1; it takes no other port for them.
derived_port query {{PORT_QUERY}} "$((port + 1))"
# The commands Unturned runs as it starts:
printf '%s\n' "Name $name" "Bind $ip" "Port $port" "MaxPlayers $players" "Map $map" \
    > "$commands"
if [ -n "$password" ]; then printf 'Password %s\n' "$password" >> "$commands"; fi
# Listed on the internet with a game server login token, a LAN server without one.
set -- +LanServer/main
if [ -n "$gslt" ]; then set -- -GSLT "$gslt" +InternetServer/main; fi
exec ./Unturned_Headless.x86_64 -batchmode -nographics "$@"
