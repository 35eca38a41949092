//! backoff runs a command and retries it with capped exponential backoff and
//! jitter. The crate is a pure core (policy, jitter, classification, the
//! retry loop, reports) inside a thin shell that touches the OS (`child`,
//! `signals`, `exit`, `main`).

pub mod budget;
pub mod child;
pub mod classify;
pub mod cli;
pub mod config;
pub mod exit;
pub mod jitter;
pub mod output;
pub mod plot;
pub mod policy;
pub mod report;
pub mod run;
pub mod schedule;
pub mod signals;
pub mod simulate;
pub mod spawn;
pub mod store;
pub mod summary;
pub mod values;

use std::ffi::OsString;
use std::io::Write;

use clap::{CommandFactory, FromArgMatches};

use crate::cli::{Cli, LogFormat, Sub};
use crate::config::UsageError;
use crate::exit::Exit;

/// Writes `backoff: MESSAGE` to stderr in one write, ignoring a closed stderr.
pub fn say(message: &str) {
    let line = format!("backoff: {message}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// Turns a clap error into backoff's one-line form (or help/version on
/// stdout), with the status it calls for.
fn clap_error(e: &clap::Error) -> Exit {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = std::io::stdout().write_all(e.render().to_string().as_bytes());
            return Exit::SUCCESS;
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = std::io::stderr().write_all(e.render().to_string().as_bytes());
            return Exit::USAGE;
        }
        _ => {}
    }
    let ctx = |k| match e.get(k) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    let message = match (
        e.kind(),
        ctx(ContextKind::InvalidArg),
        ctx(ContextKind::InvalidValue),
    ) {
        (ErrorKind::ValueValidation | ErrorKind::InvalidValue, Some(arg), Some(value)) => {
            let flag = arg.split(' ').next().unwrap_or(&arg).to_owned();
            let why = match e.kind() {
                ErrorKind::InvalidValue => match e.get(ContextKind::ValidValue) {
                    Some(ContextValue::Strings(v)) => format!("expected one of {}", v.join(", ")),
                    _ => "not a valid value".to_owned(),
                },
                _ => std::error::Error::source(e)
                    .map_or_else(|| "not a valid value".to_owned(), ToString::to_string),
            };
            format!("invalid value '{value}' for '{flag}': {why}")
        }
        (ErrorKind::MissingRequiredArgument, _, _) => {
            "no command given (usage: backoff [OPTIONS] [--] COMMAND [ARGS]...)".to_owned()
        }
        _ => {
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or("bad usage");
            format!(
                "{} (see 'backoff --help')",
                first.trim_start_matches("error: ")
            )
        }
    };
    say(&message);
    Exit::USAGE
}

/// Parses the command line, runs what it asks for, and returns how to exit.
pub fn main_with_args(args: Vec<OsString>) -> Exit {
    let (cli, given) = match parse(args) {
        Ok(parsed) => parsed,
        Err(e) => return clap_error(&e),
    };
    let result = match cli.subcommand {
        Some(Sub::Schedule(ref args)) => config::policy(&args.policy, given).map(|cfg| {
            let _ = std::io::stdout().write_all(schedule::render(&cfg, args.format).as_bytes());
            Exit::SUCCESS
        }),
        Some(Sub::Budget(ref command)) => budget_command(command),
        Some(Sub::Simulate(ref args)) => simulate_command(args),
        None => run_command(cli, given),
    };
    result.unwrap_or_else(|UsageError(message)| {
        say(&message);
        Exit::USAGE
    })
}

/// Parses the command line. Kept out of line, as is `run_command`, so that
/// the parser's large stack frames and those of the run are not stacked on
/// one another: every page of stack first touched costs a page fault.
#[inline(never)]
fn parse(args: Vec<OsString>) -> Result<(Cli, config::Given), clap::Error> {
    // The definition of the command line is not dropped: freeing its
    // hundreds of small allocations would cost more than the parse itself,
    // and exit returns the memory anyway.
    let mut command = std::mem::ManuallyDrop::new(Cli::command());
    let mut matches = command.try_get_matches_from_mut(args)?;
    let given = match matches.subcommand() {
        None => config::Given::run(&matches),
        Some(("schedule", sub)) => config::Given::policy(sub),
        Some(_) => config::Given::default(),
    };
    // Taken apart in place: no copy of the matches is made.
    Ok((Cli::from_arg_matches_mut(&mut matches)?, given))
}

#[inline(never)]
fn run_command(cli: Cli, given: config::Given) -> Result<Exit, UsageError> {
    let cfg = config::run(cli, given)?;
    // Before the signal handlers: until then Ctrl-C ends a long read at once.
    let stdin = if cfg.replay_stdin {
        Some(child::spool_stdin().map_err(|e| UsageError(format!("cannot read stdin: {e}")))?)
    } else {
        None
    };
    let watch = signals::SignalWatch::install()
        .map_err(|e| UsageError(format!("cannot watch signals: {e}")))?;
    let seed = cfg.policy.seed.unwrap_or_else(random_seed);
    let plan = run::Plan {
        policy: cfg.policy.policy,
        max_retries: cfg.policy.max_retries,
        seed,
        rules: &cfg.rules,
        command: &cfg.command,
        timeout: cfg.limits.timeout,
        max_time: cfg.limits.max_time,
        preserve_status: cfg.limits.preserve_status,
        budget: cfg.budget.as_ref().map(|b| b as &dyn run::RetryBudget),
    };
    let label = cfg
        .name
        .clone()
        .unwrap_or_else(|| cfg.command[0].to_string_lossy().into_owned());
    let (mut text, mut json);
    let log: &mut dyn report::Report = match cfg.log_format {
        LogFormat::Json => {
            json = summary::JsonReport::new(
                std::io::stderr(),
                cfg.verbosity,
                label.clone(),
                std::time::SystemTime::now,
            );
            &mut json
        }
        format => {
            let new = if format == LogFormat::Github {
                report::TextReport::github
            } else {
                report::TextReport::new
            };
            text = new(std::io::stderr(), cfg.verbosity, cfg.name.as_deref());
            &mut text
        }
    };
    let mut recorder = summary::Recorder::new(label, std::time::SystemTime::now);
    let mut exec = child::RealExecutor::new(
        cfg.command.clone(),
        child::Options {
            foreground: cfg.foreground,
            timeout_signal: cfg.limits.signal,
            kill_after: cfg.limits.kill_after,
            hold_stdout: cfg.hold_stdout,
        },
        cfg.output_rules.clone(),
        stdin,
        watch,
    )
    .map_err(|e| UsageError(format!("cannot hold stdout: {e}")))?;
    let exit = run::run(
        &plan,
        &mut exec,
        &mut summary::Reports(vec![log, &mut recorder]),
    );
    write_summaries(&cfg, &recorder, exit);
    Ok(exit)
}

/// Writes `--report` and `--metrics-file`. A file that cannot be written is
/// reported, but the run's exit status stays the command's.
fn write_summaries(cfg: &config::RunConfig, recorder: &summary::Recorder, exit: Exit) {
    if let Some(path) = &cfg.report {
        let mut doc = format!("{:#}", recorder.report(exit));
        doc.push('\n');
        if let Err(e) = summary::write_atomically(path, doc.as_bytes()) {
            say(&format!("cannot write --report '{}': {e}", path.display()));
        }
    }
    if let Some(path) = &cfg.metrics_file {
        let previous = std::fs::read_to_string(path).ok();
        let text = recorder.metrics(exit, previous.as_deref());
        if let Err(e) = summary::write_atomically(path, text.as_bytes()) {
            say(&format!(
                "cannot write --metrics-file '{}': {e}",
                path.display()
            ));
        }
    }
}

/// `backoff simulate`.
fn simulate_command(args: &cli::SimulateArgs) -> Result<Exit, UsageError> {
    let setup = config::simulation(args, random_seed)?;
    let cells = simulate::simulate(&setup);
    let text = match args.format {
        cli::Format::Table => {
            let mut t = plot::table(&setup, &cells);
            t.push_str(&plot::terminal_charts(&setup, &cells));
            t
        }
        cli::Format::Csv => plot::csv(&cells),
        cli::Format::Json => plot::json_doc(&setup, &cells),
    };
    let _ = std::io::stdout().write_all(text.as_bytes());
    if let Some(path) = &args.plot {
        plot::svg(&setup, &cells, path)
            .map_err(|e| UsageError(format!("cannot write --plot '{}': {e}", path.display())))?;
    }
    Ok(Exit::SUCCESS)
}

/// `backoff budget show|reset KEY`.
fn budget_command(command: &cli::BudgetCommand) -> Result<Exit, UsageError> {
    let fail = |key: &str, b: &store::Store, e: String| {
        UsageError(format!("retry budget '{key}' ({}): {e}", b.describe()))
    };
    match command {
        cli::BudgetCommand::Show { key, store, format } => {
            let b = config::open_budget(key, store, 0)?;
            let level = b.level().map_err(|e| fail(key, &b, e))?;
            let line = match format {
                cli::BudgetFormat::Text => format!(
                    "{key}: {} of {} tokens ({})\n",
                    budget::show_tokens(level),
                    budget::show_tokens(store.budget_burst()),
                    b.describe()
                ),
                cli::BudgetFormat::Json => format!(
                    "{}\n",
                    serde_json::json!({
                        "key": key,
                        "tokens": budget::show_tokens(level).parse::<f64>().unwrap_or(0.0),
                        "micro_tokens": level,
                        "burst": budget::show_tokens(store.budget_burst()).parse::<f64>().unwrap_or(0.0),
                        "store": b.describe(),
                    })
                ),
            };
            let _ = std::io::stdout().write_all(line.as_bytes());
        }
        cli::BudgetCommand::Reset { key, store } => {
            let b = config::open_budget(key, store, 0)?;
            b.reset().map_err(|e| fail(key, &b, e))?;
        }
    }
    Ok(Exit::SUCCESS)
}

/// A seed from the OS, or from the clock and pid if the OS has none to give.
fn random_seed() -> u64 {
    use rand::TryRng;
    rand::rngs::SysRng.try_next_u64().unwrap_or_else(|_| {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        #[allow(clippy::cast_possible_truncation)]
        let t = t as u64;
        t ^ u64::from(std::process::id()).rotate_left(32)
    })
}
