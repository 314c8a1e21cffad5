# include: ../_shared/wine-env.sh
# include: ../_shared/oneline.sh
# include: ../_shared/sedesc.sh
config=config/SpaceEngineers-Dedicated.cfg
xml() {  # $1 as XML text
    oneline "$1" | sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g'
}
xmlset() {  # tag value: the text of <tag> in the configuration
    value=$(sedesc "$(xml "$2")")
    sed -i "s|<$1>[^<]*</$1>|<$1>$value</$1>|" "$config"
}
port={{SERVER_PORT}}
# The game port (UDP) and Steam's port.
if [ -f "$config" ]; then
    xmlset ServerName {{SERVER_NAME}}
    xmlset WorldName {{WORLD_NAME}}
    xmlset GameMode {{GAME_MODE}}
    xmlset MaxPlayers {{MAX_PLAYERS}}
    xmlset IP {{SERVER_IP}}
    xmlset ServerPort "$port"
    xmlset SteamPort {{PORT_STEAM}}
fi
path="Z:$(printf '%s' "$PWD/config" | tr / '\\')"
exec wine ./DedicatedServer64/SpaceEngineersDedicated.exe -console -path "$path"
