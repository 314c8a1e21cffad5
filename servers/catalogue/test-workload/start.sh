python3 {{AGENT_WORKLOADS}}/gameserver.py --host {{SERVER_IP}} --port {{SERVER_PORT}} --ready-delay {{READY_DELAY}}
