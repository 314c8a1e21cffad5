export HOME="$PWD"
exec ./srcds_run -game tf -console -norestart -strictportbind \
    -ip {{SERVER_IP}} -port {{SERVER_PORT}} -maxplayers {{MAX_PLAYERS}} +map {{MAP}} \
    +sv_password {{SERVER_PASSWORD}} +rcon_password {{RCON_PASSWORD}} \
    +hostname {{SERVER_NAME}} +sv_setsteamaccount {{GSLT}}
