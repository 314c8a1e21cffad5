export HOME="$PWD"
# include: ../_shared/oneline.sh
# include: ../_shared/json.sh
# include: ../_shared/sedesc.sh
config=storage/starbound_server.config
name={{SERVER_NAME}}
ip={{SERVER_IP}}
port={{SERVER_PORT}}
players={{MAX_PLAYERS}}
jsonnum() {  # key number: the value of "key" : … in the configuration
    sed -i "s|\"$1\"[[:space:]]*:[[:space:]]*[0-9]*|\"$1\" : $2|" "$config"
}
jsonstr() {  # key text
    value=$(sedesc "$(json "$2")")
    sed -i "s|\"$1\"[[:space:]]*:[[:space:]]*\"[^\"]*\"|\"$1\" : $value|" "$config"
}
mkdir -p storage
if [ -s "$config" ]; then
    jsonnum gameServerPort "$port"
    jsonnum maxPlayers "$players"
    jsonstr gameServerBind "$ip"
    jsonstr serverName "$name"
else
    # Starbound completes the file with its defaults on its first start.
    printf '{\n  "gameServerBind" : %s,\n  "gameServerPort" : %s,\n' \
        "$(json "$ip")" "$port" > "$config"
    printf '  "maxPlayers" : %s,\n  "serverName" : %s\n}\n' \
        "$players" "$(json "$name")" >> "$config"
fi
cd linux && exec ./starbound_server
