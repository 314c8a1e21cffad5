#!/bin/sh
# Minecraft: Java Edition: Mojang's vanilla server jar of the chosen version, from the version
# manifest (piston-meta), checked against its SHA-1. eula.txt only when the owner accepted it.
set -eu
version={{VERSION}}
eula={{EULA}}
# The JSON, blanks removed (ids, hashes and URLs have none), one object a line, for sed.
flatten() {
    tr -d ' \t\r\n' | tr '{}' '\n\n'
}
curl -fsSL https://piston-meta.mojang.com/mc/game/version_manifest_v2.json | flatten > .manifest
case "$version" in
    latest | "") version=$(sed -n 's/.*"release":"\([^"]*\)".*/\1/p' .manifest | head -n 1) ;;
    snapshot) version=$(sed -n 's/.*"snapshot":"\([^"]*\)".*/\1/p' .manifest | head -n 1) ;;
esac
version_url=$(grep -F "\"id\":\"$version\"," .manifest | sed -n 's/.*"url":"\([^"]*\)".*/\1/p' \
    | head -n 1)
rm -f .manifest
if [ -z "$version" ] || [ -z "$version_url" ]; then
    echo "Minecraft version ${version:-?} is not in Mojang's version manifest." >&2
    exit 1
fi
server=$(curl -fsSL "$version_url" | tr -d ' \t\r\n' | sed -n 's/.*"server":{\([^}]*\)}.*/\1/p')
jar_url=$(printf '%s\n' "$server" | sed -n 's/.*"url":"\([^"]*\)".*/\1/p')
jar_sha1=$(printf '%s\n' "$server" | sed -n 's/.*"sha1":"\([0-9a-f]*\)".*/\1/p')
if [ -z "$jar_url" ] || [ -z "$jar_sha1" ]; then
    echo "Minecraft $version has no server download." >&2
    exit 1
fi
echo "Downloading the Minecraft $version server."
curl -fsSL -o server.jar.part "$jar_url"
echo "$jar_sha1  server.jar.part" | sha1sum -c - > /dev/null
mv server.jar.part server.jar
case "$eula" in
    true | True | 1)
        printf '%s\n' '# The server owner accepted https://aka.ms/MinecraftEULA' 'eula=true' \
            > eula.txt
        ;;
    *)
        echo "The Minecraft EULA is not accepted: no eula.txt, the server will refuse to start."
        ;;
esac
