mkdir -p steamcmd steamapps
if [ ! -x steamcmd/steamcmd.sh ]; then
    curl -fsSL https://steamcdn-a.akamaihd.net/client/installer/steamcmd_linux.tar.gz \
        | tar -xzf - -C steamcmd
fi
# SteamCMD updates itself on its first run and sometimes gives up half way: try again.
attempt=1
until ./steamcmd/steamcmd.sh +force_install_dir "$server_dir" "$@" \
    +app_update "$app_id" validate +quit; do
    if [ "$attempt" -ge 3 ]; then
        echo "SteamCMD failed $attempt times." >&2
        exit 1
    fi
    attempt=$((attempt + 1))
done
# SteamCMD can end "successfully" without installing anything (a refused login, say).
if [ ! -f "steamapps/appmanifest_$app_id.acf" ]; then
    echo "SteamCMD did not install app $app_id." >&2
    exit 1
fi
# The Steam API of the server loads these from $HOME/.steam.
mkdir -p .steam/sdk32 .steam/sdk64
cp steamcmd/linux32/steamclient.so .steam/sdk32/steamclient.so
cp steamcmd/linux64/steamclient.so .steam/sdk64/steamclient.so
