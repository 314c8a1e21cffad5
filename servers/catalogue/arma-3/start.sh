export HOME="$PWD"
# include: ../_shared/oneline.sh
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
# The game port; Steam query, Steam and BattlEye on port+1 to port+4.
exec ./arma3server_x64 -ip={{SERVER_IP}} -port={{SERVER_PORT}} -config=server.cfg \
    -profiles=profiles -name=server
