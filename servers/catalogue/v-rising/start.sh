# include: ../_shared/wine-env.sh
password={{SERVER_PASSWORD}}
port={{SERVER_PORT}}
# The game port, the Steam query port on port+1. Without -logFile it logs to the console.
set -- -persistentDataPath save-data -serverName {{SERVER_NAME}} -saveName {{SAVE_NAME}} \
    -address {{SERVER_IP}} -gamePort "$port" -queryPort "$((port + 1))" \
    -maxConnectedUsers {{MAX_PLAYERS}}
if [ -n "$password" ]; then set -- "$@" -password "$password"; fi
exec wine ./VRisingServer.exe "$@"
