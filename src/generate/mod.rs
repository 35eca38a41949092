//! What `backoff --generate` prints, so that an installed binary brings its
//! own documentation: the man pages (`man`) and the shell completions
//! (`complete`), made from the clap definition that the wiring hands in.
//! Nothing here is built or run unless `--generate` is given; the files in
//! the source's `man/` and `completions/` are this output.

pub mod complete;
pub mod dates;
pub mod man;
mod sections;

pub use complete::Shell;

/// One file `--generate` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item {
    /// The man page of this name: `backoff`, `backoff-budget`.
    Page(&'static str),
    /// The completion script of a shell.
    Completion(Shell),
}

/// The date of the page `name`: the day its text last changed, or for a
/// page that has none yet, the latest of them.
pub fn date_of(name: &str) -> &'static str {
    dates::DATES
        .iter()
        .find(|(page, _)| *page == name)
        .or_else(|| dates::DATES.iter().max_by_key(|(_, date)| *date))
        .map_or("1970-01-01", |(_, date)| date)
}

/// The text of `item` for `cmd`, backoff's command as the clap definition
/// gives it.
pub fn generate(cmd: &clap::Command, item: Item) -> anyhow::Result<String> {
    match item {
        Item::Page(name) => man::page(cmd, name, date_of(name)),
        Item::Completion(shell) => complete::script(cmd, shell),
    }
}
