#!/bin/sh
# Minecraft: Bedrock Edition: Mojang's bedrock-server zip for Linux, the newest or the chosen
# version. An update keeps the worlds, server.properties, permissions.json and allowlist.json.
set -eu
version={{VERSION}}
eula={{EULA}}
case "$eula" in
    true | True | 1) ;;
    *)
        echo "Downloading the Bedrock server needs the Minecraft EULA accepted." >&2
        exit 1
        ;;
esac
# Mojang's download servers refuse curl's own user agent.
agent='Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko)'
links=https://net-secondary.web.minecraft-services.net/api/v1.0/download/links
if [ -z "$version" ] || [ "$version" = latest ]; then
    url=$(curl -fsSL -A "$agent" "$links" \
        | tr -d ' \t\r\n' | tr '{}' '\n\n' | grep -F '"downloadType":"serverBedrockLinux"' \
        | sed -n 's/.*"downloadUrl":"\([^"]*\)".*/\1/p' | head -n 1)
else
    url="https://www.minecraft.net/bedrockdedicatedserver/bin-linux/bedrock-server-$version.zip"
fi
if [ -z "$url" ]; then
    echo "Could not find the Bedrock server's download." >&2
    exit 1
fi
echo "Downloading $url"
curl -fsSL -A "$agent" -o bedrock-server.zip "$url"
rm -rf .bedrock-new
mkdir .bedrock-new
unzip -q bedrock-server.zip -d .bedrock-new
for kept in server.properties permissions.json allowlist.json; do
    if [ -f "$kept" ]; then
        rm -f ".bedrock-new/$kept"
    fi
done
cp -R .bedrock-new/. .
rm -rf .bedrock-new bedrock-server.zip
chmod +x bedrock_server
