export HOME="$PWD"
# include: ../_shared/oneline.sh
# One shard (the surface, no caves), its cluster under ./dst/config/Cluster_1.
root="$PWD/dst"
cluster="$root/config/Cluster_1"
mkdir -p "$cluster/Master"
token=$(oneline {{CLUSTER_TOKEN}})
name=$(oneline {{SERVER_NAME}})
password=$(oneline {{SERVER_PASSWORD}})
mode={{GAME_MODE}}
players={{MAX_PLAYERS}}
port={{SERVER_PORT}}
master_port={{PORT_MASTER}}
auth_port={{PORT_AUTH}}
printf '%s\n' "$token" > "$cluster/cluster_token.txt"
printf '%s\n' '[GAMEPLAY]' "game_mode = $mode" "max_players = $players" 'pvp = false' \
    'pause_when_empty = true' '' '[NETWORK]' "cluster_name = $name" \
    "cluster_password = $password" 'cluster_intention = cooperative' '' '[MISC]' \
    'console_enabled = true' '' '[SHARD]' 'shard_enabled = false' > "$cluster/cluster.ini"
# The game port (UDP), Steam's master server and authentication ports.
printf '%s\n' '[NETWORK]' "server_port = $port" '' '[SHARD]' 'is_master = true' '' \
    '[STEAM]' "master_server_port = $master_port" "authentication_port = $auth_port" \
    > "$cluster/Master/server.ini"
cd bin64 && exec ./dontstarve_dedicated_server_nullrenderer_x64 -console \
    -persistent_storage_root "$root" -conf_dir config -cluster Cluster_1 -shard Master
