export HOME="$PWD"
# include: ../_shared/oneline.sh
# include: ../_shared/is_true.sh
# include: ../_shared/sedesc.sh
settings=Pal/Saved/Config/LinuxServer/PalWorldSettings.ini
mkdir -p Pal/Saved/Config/LinuxServer
if ! grep -q "^OptionSettings=" "$settings" 2>/dev/null; then
    if [ -f DefaultPalWorldSettings.ini ]; then
        cp DefaultPalWorldSettings.ini "$settings"
    else  # Palworld takes its defaults for the fields left out
        printf '%s\n' '[/Script/Pal.PalGameWorldSettings]' \
            'OptionSettings=(ServerName="",ServerPassword="",AdminPassword="")' \
            > "$settings"
    fi
fi
palset() {  # field value: a text field of the OptionSettings=(…) line
    value=$(sedesc "$2" | tr -d '"')
    sed -i "s|\([(,]$1=\)\"[^\"]*\"|\1\"$value\"|" "$settings"
}
palset ServerName {{SERVER_NAME}}
palset ServerPassword {{SERVER_PASSWORD}}
palset AdminPassword {{ADMIN_PASSWORD}}
set --
if is_true {{COMMUNITY}}; then set -- -publiclobby; fi
# The game port (UDP) and the Steam query port.
exec ./Pal/Binaries/Linux/PalServer-Linux-Shipping Pal -port={{SERVER_PORT}} \
    -queryport={{PORT_QUERY}} -players={{MAX_PLAYERS}} -useperfthreads \
    -NoAsyncLoadingThread -UseMultithreadForDS "$@"
