//! `readout completions SHELL` and `readout man`: shell completion scripts and man pages,
//! generated from the same clap definition that parses the command line, so they never drift
//! from the flags the binary takes.

use anyhow::{Context, Result};
use clap::Args;
use clap_complete::Shell;
use std::path::PathBuf;

#[derive(Args)]
pub struct CompletionsArgs {
    /// bash, zsh, fish, powershell or elvish. For example, bash: `readout completions bash >
    /// ~/.local/share/bash-completion/completions/readout`; zsh: into a folder of your `$fpath`
    /// as `_readout`; fish: `~/.config/fish/completions/readout.fish`.
    shell: Shell,
}

#[derive(Args)]
pub struct ManArgs {
    /// Write a man page for `readout` and one for every subcommand (readout.1, readout-score.1,
    /// …) into this folder (made if missing), instead of printing `readout`'s page.
    #[arg(long, short = 'o', value_name = "DIR")]
    out_dir: Option<PathBuf>,
}

/// Print the completion script for `a.shell`.
pub fn completions(a: CompletionsArgs, mut cli: clap::Command) -> Result<i32> {
    clap_complete::generate(a.shell, &mut cli, "readout", &mut std::io::stdout().lock());
    Ok(0)
}

/// Print the top-level man page, or write every page into `--out-dir`.
pub fn man(a: ManArgs, cli: clap::Command) -> Result<i32> {
    match a.out_dir {
        Some(dir) => {
            std::fs::create_dir_all(&dir).with_context(|| format!("making {}", dir.display()))?;
            clap_mangen::generate_to(cli, &dir).with_context(|| format!("writing man pages into {}", dir.display()))?;
            eprintln!("wrote the man pages into {} (read one with `man {}/readout.1`)", dir.display(), dir.display());
        }
        None => clap_mangen::Man::new(cli).render(&mut std::io::stdout().lock())?,
    }
    Ok(0)
}
