"""`driftgate completion SHELL`: the shell completion script of driftgate (click's), to load
from the shell's start-up file. Completion asks `driftgate` itself at each tab press, with
`_DRIFTGATE_COMPLETE` set, and loads no command's module to list the commands."""

from __future__ import annotations

import click

SHELLS = ("bash", "zsh", "fish")
COMPLETE_VAR = "_DRIFTGATE_COMPLETE"


@click.command()
@click.argument("shell", type=click.Choice(SHELLS))
def completion(shell: str) -> None:
    """Print the shell completion script of driftgate for bash, zsh or fish.

    \b
    bash:  eval "$(driftgate completion bash)"   in ~/.bashrc
    zsh:   eval "$(driftgate completion zsh)"    in ~/.zshrc
    fish:  driftgate completion fish > ~/.config/fish/completions/driftgate.fish

    Bash needs version 4.4 or later. Completion names commands, options, choices and files.
    """
    from click.shell_completion import get_completion_class

    from cli.main import main

    completer = get_completion_class(shell)
    if completer is None:  # click knows each of SHELLS; a guard for another click
        raise click.UsageError(f"click has no completion for {shell}")
    script = completer(main, {}, "driftgate", COMPLETE_VAR).source()
    click.echo(script, nl=not script.endswith("\n"))
