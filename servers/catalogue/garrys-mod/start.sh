export HOME="$PWD"
exec ./srcds_run -game garrysmod -console -norestart -strictportbind \
    -ip {{SERVER_IP}} -port {{SERVER_PORT}} -maxplayers {{MAX_PLAYERS}} +map {{MAP}} \
    +gamemode {{GAMEMODE}} \
    +hostname {{SERVER_NAME}} +sv_setsteamaccount {{GSLT}}
