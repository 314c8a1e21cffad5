# include: ../_shared/oneline.sh
world=$(oneline {{WORLD_NAME}})
world_file=$(printf '%s' "$world" | tr -c 'A-Za-z0-9_-' '_')
case {{WORLD_SIZE}} in small) size=1 ;; large) size=3 ;; *) size=2 ;; esac
case {{DIFFICULTY}} in
    expert) difficulty=1 ;;
    master) difficulty=2 ;;
    journey) difficulty=3 ;;
    *) difficulty=0 ;;
esac
players={{MAX_PLAYERS}}
port={{SERVER_PORT}}
password=$(oneline {{SERVER_PASSWORD}})
motd=$(oneline {{SERVER_NAME}})
mkdir -p worlds
# autocreate only applies while the world file does not exist yet.
printf '%s\n' "world=$PWD/worlds/$world_file.wld" "worldpath=$PWD/worlds" \
    "worldname=$world" "autocreate=$size" "difficulty=$difficulty" \
    "maxplayers=$players" "port=$port" "password=$password" "motd=$motd" \
    "secure=1" "upnp=0" > serverconfig.txt
exec ./TerrariaServer.bin.x86_64 -config serverconfig.txt -ip {{SERVER_IP}}
