export HOME="$PWD"
export LD_LIBRARY_PATH="$PWD/RustDedicated_Data/Plugins/x86_64:${LD_LIBRARY_PATH:-}"
port={{SERVER_PORT}}
# Game port (UDP), then Steam query on port+1, RCON (WebSocket) on port+2, Rust+ on port+3.
exec ./RustDedicated -batchmode -nographics \
    +server.ip {{SERVER_IP}} +server.port "$port" +server.queryport "$((port + 1))" \
    +rcon.ip {{SERVER_IP}} +rcon.port "$((port + 2))" +rcon.web 1 +rcon.password {{RCON_PASSWORD}} \
    +app.port "$((port + 3))" +server.identity main +server.hostname {{SERVER_NAME}} \
    +server.level {{LEVEL}} +server.seed {{SEED}} +server.worldsize {{WORLD_SIZE}} \
    +server.maxplayers {{MAX_PLAYERS}} +server.saveinterval 300
