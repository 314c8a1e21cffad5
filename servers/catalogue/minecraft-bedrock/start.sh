oneline() {  # $1 on one line: settings files take a value a line
    printf '%s' "$1" | tr '\r\n' '  '
}
setprop() {  # file key value: key=value in a .properties file, replaced or added
    touch "$1"
    grep -v "^$2=" "$1" > "$1.new" || true
    printf '%s=%s\n' "$2" "$(oneline "$3")" >> "$1.new"
    mv "$1.new" "$1"
}
port={{SERVER_PORT}}
setprop server.properties server-name {{SERVER_NAME}}
setprop server.properties gamemode {{GAMEMODE}}
setprop server.properties max-players {{MAX_PLAYERS}}
setprop server.properties server-port "$port"
# Bedrock also listens on IPv6, on the next port.
setprop server.properties server-portv6 "$((port + 1))"
export LD_LIBRARY_PATH=.
exec ./bedrock_server
