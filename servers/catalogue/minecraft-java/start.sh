# include: ../_shared/oneline.sh
# include: ../_shared/setprop.sh
setprop server.properties server-ip {{SERVER_IP}}
setprop server.properties server-port {{SERVER_PORT}}
setprop server.properties query.port {{SERVER_PORT}}
setprop server.properties max-players {{MAX_PLAYERS}}
setprop server.properties difficulty {{DIFFICULTY}}
exec java -Xms128M -Xmx{{SERVER_MEMORY}}M -jar server.jar nogui
