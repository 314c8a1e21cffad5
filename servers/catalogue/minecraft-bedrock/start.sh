# include: ../_shared/oneline.sh
# include: ../_shared/setprop.sh
port={{SERVER_PORT}}
setprop server.properties server-name {{SERVER_NAME}}
setprop server.properties gamemode {{GAMEMODE}}
setprop server.properties max-players {{MAX_PLAYERS}}
setprop server.properties server-port "$port"
# Bedrock also listens on IPv6, on a port of its own.
setprop server.properties server-portv6 {{PORT_IPV6}}
export LD_LIBRARY_PATH=.
exec ./bedrock_server
