export HOME="$PWD"
# include: ../_shared/oneline.sh
# include: ../_shared/derived_port.sh
cfgstr() {  # $1 as a string of Arma's configuration files
    printf '"%s"' "$(oneline "$1" | sed 's/"/""/g')"
}
name={{SERVER_NAME}}
password={{SERVER_PASSWORD}}
admin={{ADMIN_PASSWORD}}
players={{MAX_PLAYERS}}
{
    printf 'hostname = %s;\n' "$(cfgstr "$name")"
    printf 'password = %s;\n' "$(cfgstr "$password")"
    printf 'passwordAdmin = %s;\n' "$(cfgstr "$admin")"
    printf 'maxPlayers = %s;\n' "$players"
    printf '%s\n' 'persistent = 1;' 'kickDuplicate = 1;' 'verifySignatures = 2;' \
        'BattlEye = 1;'
} > server.cfg
mkdir -p profiles
port={{SERVER_PORT}}
# Arma 3 derives its other ports from the game port: Steam queries, Steam, VON, BattlEye.
derived_port query {{PORT_QUERY}} "$((port + 1))"
derived_port steam {{PORT_STEAM}} "$((port + 2))"
derived_port von {{PORT_VON}} "$((port + 3))"
derived_port battleye {{PORT_BATTLEYE}} "$((port + 4))"
exec ./arma3server_x64 -ip={{SERVER_IP}} -port="$port" -config=server.cfg \
    -profiles=profiles -name=server
