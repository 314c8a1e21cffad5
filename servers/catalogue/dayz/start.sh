export HOME="$PWD"
# include: ../_shared/oneline.sh
# include: ../_shared/sedesc.sh
# include: ../_shared/derived_port.sh
cfgstr() {  # $1 as a string of DayZ's configuration files
    printf '"%s"' "$(oneline "$1" | sed 's/"/""/g')"
}
config=serverDZ.cfg
setcfg() {  # key value: the line 'key = value;' of serverDZ.cfg
    touch "$config"
    if grep -q "^[[:space:]]*$1[[:space:]]*=" "$config"; then
        sed -i "s|^[[:space:]]*$1[[:space:]]*=.*|$1 = $(sedesc "$2");|" "$config"
    else
        printf '%s = %s;\n' "$1" "$2" >> "$config"
    fi
}
name={{SERVER_NAME}}
password={{SERVER_PASSWORD}}
admin={{ADMIN_PASSWORD}}
port={{SERVER_PORT}}
setcfg hostname "$(cfgstr "$name")"
setcfg password "$(cfgstr "$password")"
setcfg passwordAdmin "$(cfgstr "$admin")"
setcfg maxPlayers {{MAX_PLAYERS}}
# DayZ keeps the game port + 1 and runs BattlEye on + 2 itself; Steam queries on the query port.
derived_port reserved {{PORT_RESERVED}} "$((port + 1))"
derived_port battleye {{PORT_BATTLEYE}} "$((port + 2))"
setcfg steamQueryPort {{PORT_QUERY}}
mkdir -p profiles
exec ./DayZServer -config="$config" -ip={{SERVER_IP}} -port="$port" -profiles=profiles \
    -dologs -adminlog -netlog -freezecheck
