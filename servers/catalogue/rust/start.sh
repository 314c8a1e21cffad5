export HOME="$PWD"
export LD_LIBRARY_PATH="$PWD/RustDedicated_Data/Plugins/x86_64:${LD_LIBRARY_PATH:-}"
# Game port (UDP); Steam queries, RCON (WebSocket) and Rust+ on the server's named ports.
exec ./RustDedicated -batchmode -nographics \
    +server.ip {{SERVER_IP}} +server.port {{SERVER_PORT}} +server.queryport {{PORT_QUERY}} \
    +rcon.ip {{SERVER_IP}} +rcon.port {{PORT_RCON}} +rcon.web 1 +rcon.password {{RCON_PASSWORD}} \
    +app.port {{PORT_APP}} +server.identity main +server.hostname {{SERVER_NAME}} \
    +server.level {{LEVEL}} +server.seed {{SEED}} +server.worldsize {{WORLD_SIZE}} \
    +server.maxplayers {{MAX_PLAYERS}} +server.saveinterval 300
