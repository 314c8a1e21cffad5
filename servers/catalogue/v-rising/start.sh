# include: ../_shared/wine-env.sh
password={{SERVER_PASSWORD}}
# The game port and the Steam query port. Without -logFile it logs to the console.
set -- -persistentDataPath save-data -serverName {{SERVER_NAME}} -saveName {{SAVE_NAME}} \
    -address {{SERVER_IP}} -gamePort {{SERVER_PORT}} -queryPort {{PORT_QUERY}} \
    -maxConnectedUsers {{MAX_PLAYERS}}
if [ -n "$password" ]; then set -- "$@" -password "$password"; fi
exec wine ./VRisingServer.exe "$@"
