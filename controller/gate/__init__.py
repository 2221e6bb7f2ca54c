"""The run gate: preflight (`service`), its read model of agents, watches and
policies (`readmodel`) and the statements it runs."""
