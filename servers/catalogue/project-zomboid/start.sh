export HOME="$PWD"
# include: ../_shared/oneline.sh
# include: ../_shared/setprop.sh
port={{SERVER_PORT}}
memory={{SERVER_MEMORY}}
# The JVM's heap: three quarters of the server's memory, the rest is the JVM's own.
if [ -f ProjectZomboid64.json ]; then
    sed -i "s/-Xmx[0-9]*[kKmMgG]/-Xmx$((memory * 3 / 4))m/" ProjectZomboid64.json
fi
settings=Zomboid/Server/main.ini
mkdir -p Zomboid/Server
setprop "$settings" PublicName {{SERVER_NAME}}
setprop "$settings" MaxPlayers {{MAX_PLAYERS}}
setprop "$settings" Password {{SERVER_PASSWORD}}
# The game port, and the named port for direct UDP connections.
exec ./start-server.sh -cachedir="$PWD/Zomboid" -servername main -adminusername admin \
    -adminpassword {{ADMIN_PASSWORD}} -ip {{SERVER_IP}} -port "$port" \
    -udpport {{PORT_DIRECT}}
