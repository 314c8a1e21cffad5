export HOME="$PWD"
export LD_LIBRARY_PATH="$PWD/game/bin/linuxsteamrt64:${LD_LIBRARY_PATH:-}"
case {{GAME_MODE}} in
    competitive) game_type=0 game_mode=1 ;;
    wingman) game_type=0 game_mode=2 ;;
    arms_race) game_type=1 game_mode=0 ;;
    deathmatch) game_type=1 game_mode=2 ;;
    *) game_type=0 game_mode=0 ;;
esac
exec ./game/bin/linuxsteamrt64/cs2 -dedicated -console -usercon -ip {{SERVER_IP}} \
    -port {{SERVER_PORT}} -maxplayers {{MAX_PLAYERS}} +game_type "$game_type" \
    +game_mode "$game_mode" +map {{MAP}} +hostname {{SERVER_NAME}} \
    +sv_password {{SERVER_PASSWORD}} +rcon_password {{RCON_PASSWORD}} +sv_setsteamaccount {{GSLT}}
