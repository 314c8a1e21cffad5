oneline() {  # $1 on one line: settings files take a value a line
    printf '%s' "$1" | tr '\r\n' '  '
}
setprop() {  # file key value: key=value in a .properties file, replaced or added
    touch "$1"
    grep -v "^$2=" "$1" > "$1.new" || true
    printf '%s=%s\n' "$2" "$(oneline "$3")" >> "$1.new"
    mv "$1.new" "$1"
}
setprop server.properties server-ip {{SERVER_IP}}
setprop server.properties server-port {{SERVER_PORT}}
setprop server.properties query.port {{SERVER_PORT}}
setprop server.properties max-players {{MAX_PLAYERS}}
setprop server.properties difficulty {{DIFFICULTY}}
exec java -Xms128M -Xmx{{SERVER_MEMORY}}M -jar server.jar nogui
