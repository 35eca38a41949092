//! Checked domain types built from the command line, with the checks that
//! involve more than one flag. Errors name the flag and quote the value.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use clap::ArgMatches;
use clap::parser::ValueSource;

use crate::classify::{Applied, Preset, Rule, Rules};
use crate::cli::values::RuleList;
use crate::cli::{
    BreakerArgs, BudgetArgs, BudgetStore, Cli, GoalArgs, OutputArgs, PolicyArgs, PresetName,
    RuleArgs, SimFormat, SimModel, SimScenario, SimStrategy, SimulateArgs, StoreArgs, ThrottleArgs,
    ThrottleLimits, TimeArgs,
};
use crate::exec::scan::{self, Headers, OutputRules};
use crate::fleet::breaker::Breaker;
use crate::fleet::bucket::{self, Bucket};
use crate::fleet::throttle::{self, Throttle};
use crate::jitter::Jitter;
use crate::policy::{Policy, PolicyConfig};
use crate::preset;
use crate::report::ci::StepFiles;
use crate::report::{Labels, LogFormat, Verbosity, Warnings};
use crate::run::{Goal, Hints, Hooks};
use crate::simulate::{self, cron, overload};
use crate::store::file;
use crate::store::once::{OnceLimits, OnceStore, Onces};
use crate::store::{
    BreakerStore, Breakers, Budgets, Kind, Location, LockLimits, LockStore, Locks,
    MAX_STORE_TIMEOUT, OpenError, Settings, Shared, Store, StreakStore, Streaks, ThrottleStore,
    Throttles, redact,
};
use clap::ValueEnum as _;

/// backoff's own failure: bad usage or a bad value. Exit 125.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// A bad value of `flag`, named by where `given` says it came from: the
/// flag, or the environment variable that gave it.
/// The value is quoted as it was given (`0ms`, not `0`), and a default is
/// said to be one.
fn invalid(
    given: &Given,
    value: impl fmt::Display,
    flag: &str,
    why: impl fmt::Display,
) -> UsageError {
    let source = crate::cli::flag_source(flag, |id| given.from_environment(id));
    let (value, whence) = match given.typed(flag) {
        Some((text, ValueSource::DefaultValue)) => (text.to_owned(), " (its default)"),
        Some((text, _)) => (text.to_owned(), ""),
        None => (value.to_string(), ""),
    };
    UsageError(format!(
        "invalid value '{}' for {source}{whence}: {why}",
        crate::cli::quotable(&value)
    ))
}

/// The flag `flag` (`--cap`) with its value as it was given, and where
/// from when not from the command line (`--cap (50ms, its default)`), for
/// a refusal that names another flag's value.
fn flag_as_given(given: &Given, flag: &str, value: Duration) -> String {
    let id = flag.trim_start_matches('-').replace('-', "_");
    let env = crate::cli::flag_source(flag, |_| given.from_environment(&id));
    match given.typed(flag) {
        Some((text, ValueSource::DefaultValue)) => format!("{flag} ({text}, its default)"),
        Some((text, ValueSource::EnvVariable)) => {
            let name = env.split(' ').next().unwrap_or_default();
            format!("{flag} ({text}, from {name})")
        }
        Some((text, _)) => format!("{flag} ({text})"),
        None => format!("{flag} ({})", show(value)),
    }
}

/// Time limits, checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `--timeout`.
    pub timeout: Option<Duration>,
    /// `--signal`.
    pub signal: i32,
    /// `--kill-after`.
    pub kill_after: Duration,
    /// `--max-time`.
    pub max_time: Option<Duration>,
    /// `--idle-timeout`.
    pub idle_timeout: Option<Duration>,
    /// `--preserve-status`.
    pub preserve_status: bool,
    /// `--splay`'s window; `None` without one (or with 0).
    pub splay: Option<Duration>,
}

/// Builds the time limits, refusing zero limits.
pub fn limits(args: &TimeArgs, given: &Given) -> Result<Limits, UsageError> {
    for (flag, value) in [
        ("--timeout", args.timeout),
        ("--max-time", args.max_time),
        ("--idle-timeout", args.idle_timeout),
    ] {
        if value.is_some_and(|d| d.is_zero()) {
            return Err(invalid(given, "0", flag, "must be above zero"));
        }
    }
    if let Some(d) = args.splay.filter(|&d| d > crate::splay::MAX_WINDOW) {
        return Err(invalid(
            given,
            show(d),
            "--splay",
            "must be at most 24h (a job that runs less often than daily has no herd to spread)",
        ));
    }
    if let (Some(splay), Some(max_time)) = (args.splay, args.max_time)
        && splay >= max_time
    {
        return Err(invalid(
            given,
            show(splay),
            "--splay",
            format_args!(
                "its wait before the first attempt can take all of {}, leaving the command no time; give a --splay shorter than --max-time, or a longer --max-time",
                flag_as_given(given, "--max-time", max_time)
            ),
        ));
    }
    Ok(Limits {
        splay: args.splay.filter(|d| !d.is_zero()),
        timeout: args.timeout,
        signal: args.signal,
        kill_after: args.kill_after,
        max_time: args.max_time,
        idle_timeout: args.idle_timeout,
        preserve_status: args.preserve_status,
    })
}

/// Everything a run needs, checked.
#[derive(Debug)]
// Each flag is a setting of its own, not a state in disguise.
#[allow(clippy::struct_excessive_bools)]
pub struct RunConfig {
    /// Delays, limit and seed.
    pub policy: PolicyConfig,
    /// Classification rules.
    pub rules: Rules,
    /// What ends the run.
    pub goal: Goal,
    /// `--reset-after`.
    pub reset_after: Option<Duration>,
    /// `--on-retry`, `--on-give-up`, `--on-success`, `--hook-timeout`.
    pub hooks: Hooks,
    /// Time limits.
    pub limits: Limits,
    /// What to look for in the output, if anything.
    pub output_rules: Option<OutputRules>,
    /// How a server's hint is obeyed.
    pub hints: Hints,
    /// `--hold-stdout`.
    pub hold_stdout: bool,
    /// The preset, and where it came from.
    pub preset: Option<Applied>,
    /// The words the preset adds before the command's own arguments.
    pub preset_arguments: Vec<OsString>,
    /// What the preset or an option cannot do for this command, or the
    /// command's own retries multiply: said once at the start.
    pub notices: Vec<String>,
    /// `--preset curl` with a curl that shows no headers: the preset has it
    /// dump them to a file of backoff's own.
    pub dump_headers: bool,
    /// `--replay-stdin`.
    pub replay_stdin: bool,
    /// `--output on-failure`: the most output kept (`--output-limit`);
    /// `None` with `--output live`.
    pub keep_output: Option<u64>,
    /// Keep the child in backoff's process group.
    pub foreground: bool,
    /// How much to report.
    pub verbosity: Verbosity,
    /// `--name`: a label that prefixes every report line.
    pub name: Option<String>,
    /// `--timestamps`: the local time starts every text line.
    pub timestamps: bool,
    /// `--log-format`, or github under GitHub Actions, gitlab under GitLab
    /// CI, else text.
    pub log_format: LogFormat,
    /// Where backoff's own warnings go, in the log format.
    pub warnings: Warnings,
    /// Under GitHub Actions, the step's files for its outputs and summary.
    pub github_step: Option<StepFiles>,
    /// `--report`.
    pub report: Option<PathBuf>,
    /// `--metrics-file`.
    pub metrics_file: Option<PathBuf>,
    /// `--metrics-push` and its timeout.
    pub metrics_push: Option<crate::push::Push>,
    /// `--budget`, opened and checked.
    pub budget: Option<Store>,
    /// `--breaker`, opened and checked.
    pub breaker: Option<BreakerStore>,
    /// `--breaker-exit`.
    pub breaker_exit: u8,
    /// `--throttle`, opened and checked.
    pub throttle: Option<ThrottleStore>,
    /// `--lock`, opened and checked.
    pub lock: Option<LockStore>,
    /// `--alert-after` above 1: the count of the job's failed runs in a
    /// row, opened, and N.
    pub alert: Option<(StreakStore, u64)>,
    /// `--ping` and its kin.
    pub pings: crate::ping::Urls,
    /// `--ping-timeout`.
    pub ping_timeout: Duration,
    /// `--ping-body-limit`: the most bytes of the end check-in's body.
    pub ping_body_limit: usize,
    /// `--lock-wait`.
    pub lock_wait: Duration,
    /// `--lock-exit`.
    pub lock_exit: u8,
    /// `--once-per`'s record, opened and checked.
    pub once: Option<OnceStore>,
    /// The exit status of a run `--once-per` skips because the job runs
    /// elsewhere.
    pub once_exit: u8,
    /// The command and its arguments.
    pub command: Vec<OsString>,
}

fn from_command_line(m: &ArgMatches, id: &str) -> bool {
    m.value_source(id) == Some(ValueSource::CommandLine)
}

/// The ids of the arguments whose value the environment gave, in the
/// matches of the innermost subcommand (`budget show`).
/// The text and the source of each argument with one value, in the
/// matches of the innermost subcommand. A store's URL is left out: it may
/// hold a secret, which a refusal quotes only redacted.
fn texts(mut m: &ArgMatches) -> Vec<(String, String, ValueSource)> {
    while let Some((_, sub)) = m.subcommand() {
        m = sub;
    }
    let mut texts = Vec::new();
    for id in m.ids().map(clap::Id::as_str) {
        if id == "budget_store" {
            continue;
        }
        let (Ok(Some(mut raw)), Some(source)) = (m.try_get_raw(id), m.value_source(id)) else {
            continue;
        };
        if let (Some(text), None) = (raw.next(), raw.next()) {
            texts.push((id.to_owned(), text.to_string_lossy().into_owned(), source));
        }
    }
    texts
}

/// The ids of the arguments whose value the environment gave, in the
/// matches of the innermost subcommand (`budget show`).
fn from_environment(mut m: &ArgMatches) -> Vec<String> {
    while let Some((_, sub)) = m.subcommand() {
        m = sub;
    }
    m.ids()
        .filter(|id| m.value_source(id.as_str()) == Some(ValueSource::EnvVariable))
        .map(|id| id.as_str().to_owned())
        .collect()
}

/// Where flags' values came from: which ones the command line itself gave
/// (not the environment or a default), for the checks that need to know,
/// and which ones the environment gave, for the errors that name them.
/// Read from the matches before they are taken apart into the typed
/// arguments.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Given {
    max_retries: bool,
    attempts: bool,
    budget_store: bool,
    /// The ids of the shape flags the command line gave, of `--base`,
    /// `--cap`, `--factor` and `--jitter`: `--poll` and `--delays` set or
    /// refuse them.
    shape: Vec<&'static str>,
    /// The ids of the arguments whose value is an environment variable's.
    environment: Vec<String>,
    /// The text of each argument with one value, as given (on the command
    /// line, in the environment, or as its default), and where it came
    /// from; a refusal quotes it rather than the value it was read as.
    texts: Vec<(String, String, ValueSource)>,
    /// With `--generate`: the ids of the other arguments the command line
    /// gave.
    beside_generate: Vec<String>,
}

impl Given {
    /// For `--generate`, which takes nothing else.
    pub fn generate(m: &ArgMatches) -> Given {
        Given {
            beside_generate: m
                .ids()
                .map(clap::Id::as_str)
                .filter(|id| *id != "generate" && from_command_line(m, id))
                .map(str::to_owned)
                .collect(),
            ..Given::other(m)
        }
    }

    /// For the top-level command (running a command).
    pub fn run(m: &ArgMatches) -> Given {
        Given {
            budget_store: from_command_line(m, "budget_store"),
            ..Given::policy(m)
        }
    }

    /// For a command with the policy flags only (`schedule`).
    pub fn policy(m: &ArgMatches) -> Given {
        Given {
            max_retries: from_command_line(m, "max_retries"),
            attempts: from_command_line(m, "attempts"),
            budget_store: false,
            shape: ["base", "cap", "factor", "jitter"]
                .into_iter()
                .filter(|id| from_command_line(m, id))
                .collect(),
            environment: from_environment(m),
            texts: texts(m),
            beside_generate: Vec::new(),
        }
    }

    /// For any other command (`budget`, `simulate`): `m` is the top-level
    /// matches.
    pub fn other(m: &ArgMatches) -> Given {
        Given {
            environment: from_environment(m),
            texts: texts(m),
            ..Given::default()
        }
    }

    /// Whether the command line gave the shape flag `id` (`base`, `cap`,
    /// `factor`, `jitter`).
    fn shaped(&self, id: &str) -> bool {
        self.shape.contains(&id)
    }

    /// Whether the command line gave a retry limit (`--max-retries` or
    /// `--attempts`).
    fn limited(&self) -> bool {
        self.max_retries || self.attempts
    }

    /// The same, knowing that the environment gave the value of the
    /// argument `id` as `text` (in a form clap did not read itself: clap
    /// took it as the default it was turned into).
    #[must_use]
    pub fn with_environment(mut self, id: &str, text: &str) -> Given {
        self.environment.push(id.to_owned());
        for given in self.texts.iter_mut().filter(|(i, _, _)| i == id) {
            *given = (id.to_owned(), text.to_owned(), ValueSource::EnvVariable);
        }
        self
    }

    /// Whether the environment gave the value of the argument `id`.
    pub fn from_environment(&self, id: &str) -> bool {
        self.environment.iter().any(|e| e == id)
    }

    /// Whether the command line or the environment gave `flag`'s value
    /// (not its default).
    pub fn gave(&self, flag: &str) -> bool {
        self.typed(flag)
            .is_some_and(|(_, source)| source != ValueSource::DefaultValue)
    }

    /// Whether the command line itself gave `flag`'s value (not the
    /// environment, nor its default).
    pub fn wrote(&self, flag: &str) -> bool {
        self.typed(flag)
            .is_some_and(|(_, source)| source == ValueSource::CommandLine)
    }

    /// The text of `flag`'s value as it was given, and where from.
    fn typed(&self, flag: &str) -> Option<(&str, ValueSource)> {
        let id = flag.strip_prefix("--")?.replace('-', "_");
        self.texts
            .iter()
            .find(|(i, _, _)| *i == id)
            .map(|(_, text, source)| (text.as_str(), *source))
    }
}

/// `--generate KIND` prints a file and runs nothing: it is refused beside
/// a command or another option of the command line (the environment's
/// values are defaults, and do not count).
pub fn generate_alone(kind: &str, command: &[OsString], given: &Given) -> Result<(), UsageError> {
    let beside = match (command.first(), given.beside_generate.first()) {
        (Some(word), _) => format!(
            "no command ('{}' given)",
            crate::cli::quotable(&word.to_string_lossy())
        ),
        (None, Some(id)) => format!("no other option ('--{}' given)", id.replace('_', "-")),
        (None, None) => return Ok(()),
    };
    Err(UsageError(format!(
        "--generate prints a file and runs nothing: it takes {beside}; run 'backoff --generate {kind}'"
    )))
}

fn show(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

/// Builds a checked policy from its flags; `given` tells which of them the
/// command line gave.
pub fn policy(args: &PolicyArgs, given: &Given) -> Result<PolicyConfig, UsageError> {
    let shape = shape(args, given)?;
    if args.delays.is_none() && args.poll.is_none() {
        check_formula(args, given)?;
    }
    let (cli_retries, cli_attempts, forever) = (given.max_retries, given.attempts, args.forever);
    let named: Vec<&str> = [
        (cli_retries, "--max-retries"),
        (cli_attempts, "--attempts"),
        (forever, "--forever"),
    ]
    .iter()
    .filter(|(b, _)| *b)
    .map(|(_, n)| *n)
    .collect();
    if let [first, second, ..] = named[..] {
        return Err(conflict(first, second));
    }
    // A flag wins over the environment (BACKOFF_MAX_RETRIES); --poll polls
    // forever unless the command line limits it.
    let max_retries = if forever || (args.poll.is_some() && !given.limited()) {
        None
    } else if let Some(a) = args.attempts {
        Some(a - 1)
    } else {
        Some(args.max_retries)
    };
    Ok(PolicyConfig {
        policy: shape,
        max_retries,
        seed: args.seed,
    })
}

/// `'A' cannot be used with 'B'`.
fn conflict(a: &str, b: &str) -> UsageError {
    UsageError(format!("'{a}' cannot be used with '{b}'"))
}

/// The shape of the delays: the formula, `--delays` or `--poll`, refusing
/// the formula's flags on the command line beside the other two.
fn shape(args: &PolicyArgs, given: &Given) -> Result<Policy, UsageError> {
    let formula_flags = [("base", "--base"), ("cap", "--cap"), ("factor", "--factor")];
    let refuse_formula = |flag: &str| match formula_flags.iter().find(|(id, _)| given.shaped(id)) {
        Some((_, other)) => Err(conflict(flag, other)),
        None => Ok(()),
    };
    match (&args.delays, args.poll) {
        (Some(_), Some(_)) => Err(conflict("--delays", "--poll")),
        (Some(bounds), None) => {
            refuse_formula("--delays")?;
            // A fleet's decorrelated jitter (BACKOFF_JITTER) gives way to the
            // default, as its base and cap do; on the command line it is an
            // error.
            let jitter = if args.jitter == Jitter::Decorrelated && !given.shaped("jitter") {
                Jitter::Full
            } else {
                args.jitter
            };
            if jitter == Jitter::Decorrelated {
                return Err(invalid(
                    given,
                    "decorrelated",
                    "--jitter",
                    "decorrelated jitter draws from the previous delay, not from a bound; with --delays give --jitter full, equal or none",
                ));
            }
            if bounds.0.iter().any(Duration::is_zero) && jitter != Jitter::None {
                return Err(invalid(
                    given,
                    "0",
                    "--delays",
                    "a bound of zero needs --jitter none",
                ));
            }
            Ok(Policy::explicit(bounds.0.clone(), jitter))
        }
        (None, Some(every)) => {
            refuse_formula("--poll")?;
            let jitter = if given.shaped("jitter") {
                args.jitter
            } else {
                Jitter::None
            };
            if every.is_zero() && jitter != Jitter::None {
                return Err(invalid(
                    given,
                    "0",
                    "--poll",
                    "an interval of zero needs --jitter none",
                ));
            }
            Ok(Policy::formula(every, every, 1.0, jitter))
        }
        (None, None) => Ok(Policy::formula(
            args.base,
            args.cap,
            args.factor,
            args.jitter,
        )),
    }
}

/// The formula's own checks: a base within the cap, and above zero unless
/// there is no delay at all.
fn check_formula(args: &PolicyArgs, given: &Given) -> Result<(), UsageError> {
    if args.base > args.cap {
        return Err(invalid(
            given,
            show(args.base),
            "--base",
            format!("greater than {}", flag_as_given(given, "--cap", args.cap)),
        ));
    }
    if args.base.is_zero() && !(args.jitter == Jitter::None && args.cap.is_zero()) {
        return Err(invalid(
            given,
            "0",
            "--base",
            "must be above zero (for no delay at all, add --cap 0s --jitter none)",
        ));
    }
    Ok(())
}

fn flatten(lists: &[RuleList]) -> Vec<Rule> {
    lists.iter().flat_map(|l| l.0.iter().copied()).collect()
}

/// Builds the classification rules. An outcome in both `--stop-on` and
/// `--retry-on` stops the run, as `--stop-on` is checked first; only a rule
/// that can never match is refused: a `--retry-on` rule whose every
/// outcome `--stop-on` or `--success-on` (both checked before it) takes,
/// and a `--success-on` rule whose every outcome `--stop-on` takes.
pub fn rules(args: &RuleArgs, given: &Given) -> Result<Rules, UsageError> {
    let stop_on = flatten(&args.stop_on);
    let success_on = flatten(&args.success_on);
    let retry_on = flatten(&args.retry_on);
    let before_retry: Vec<Rule> = stop_on.iter().chain(&success_on).copied().collect();
    // `--success-on 0` unless given (a repeated flag is not in `given`).
    let default_success = !given.gave("--success-on") && success_on == [Rule::Codes(0, 0)];
    let earlier = [
        ("--stop-on", &stop_on[..], false),
        ("--success-on", &success_on[..], default_success),
    ];
    for r in &retry_on {
        if r.covered_by(&before_retry) {
            return Err(never_matches("--retry-on", *r, &earlier));
        }
    }
    if !default_success {
        for r in &success_on {
            if r.covered_by(&stop_on) {
                return Err(never_matches("--success-on", *r, &earlier[..1]));
            }
        }
    }
    Ok(Rules {
        stop_on,
        success_on,
        retry_on,
        retry_output: false,
        preset: None,
        not_idempotent: false,
        until_output: false,
    })
}

/// The refusal of `rule` of `flag`, which can never match: the rules of
/// `earlier` (each flag with its rules, and whether they are its default,
/// all checked before `flag`) take every outcome it matches. Names the
/// rules of each flag that do.
fn never_matches(flag: &str, rule: Rule, earlier: &[(&str, &[Rule], bool)]) -> UsageError {
    let mut lists = Vec::new();
    for (other, rules, default) in earlier {
        let hits: Vec<String> = rules
            .iter()
            .filter(|r| r.overlaps(rule))
            .map(ToString::to_string)
            .collect();
        if !hits.is_empty() {
            let whence = if *default { " (its default)" } else { "" };
            lists.push(format!("{other} {}{whence}", hits.join(",")));
        }
    }
    let (is, takes) = if lists.len() == 1 {
        ("is", "takes")
    } else {
        ("are", "take")
    };
    UsageError(format!(
        "invalid value '{rule}' for '{flag}': it can never match, as {} {is} checked before it and {takes} every outcome it names",
        lists.join(" and ")
    ))
}

/// What `backoff simulate` runs: one of its models, checked.
#[derive(Debug, Clone)]
pub enum Simulation {
    /// Brooker's experiment.
    Contention(simulate::Setup),
    /// A server past its capacity.
    Overload(overload::Setup),
    /// A fleet's cron.
    Cron(cron::Setup),
}

/// Builds the setup of `backoff simulate`; `seed` supplies a random seed
/// when none is given. Options of the other model are refused.
pub fn simulation(
    args: &SimulateArgs,
    given: &Given,
    seed: fn() -> u64,
) -> Result<Simulation, UsageError> {
    let seed = args.seed.unwrap_or_else(seed);
    match args.model {
        SimModel::Contention => contention(args, given, seed).map(Simulation::Contention),
        SimModel::Overload => overload(args, given, seed).map(Simulation::Overload),
        SimModel::Cron => cron(args, given, seed).map(Simulation::Cron),
    }
}

/// The name of a model on the command line.
fn model_name(model: SimModel) -> &'static str {
    match model {
        SimModel::Contention => "contention",
        SimModel::Overload => "overload",
        SimModel::Cron => "cron",
    }
}

/// The first option given on the command line that `args.model` does not
/// read, with the models that do.
fn other_model_option(
    args: &SimulateArgs,
    given: &Given,
) -> Option<(&'static str, &'static [SimModel])> {
    use SimModel::{Contention as C, Cron as R, Overload as O};
    let o = &args.overload;
    let on_command_line =
        |flag: &str| matches!(given.typed(flag), Some((_, ValueSource::CommandLine)));
    let options: [(bool, &'static str, &'static [SimModel]); 25] = [
        (args.runs.is_some(), "--runs", &[C]),
        (args.jitter.is_some(), "--jitter", &[C]),
        (!args.strategy.is_empty(), "--strategy", &[C, O]),
        (args.base.is_some(), "--base", &[C, O]),
        (args.cap.is_some(), "--cap", &[C, O]),
        (on_command_line("--factor"), "--factor", &[C, O]),
        (o.scenario.is_some(), "--scenario", &[O]),
        (o.rate.is_some(), "--rate", &[O]),
        (o.capacity.is_some(), "--capacity", &[O, R]),
        (o.queue.is_some(), "--queue", &[O]),
        (o.timeout.is_some(), "--timeout", &[O]),
        (o.brownout.is_some(), "--brownout", &[O]),
        (o.outage_start.is_some(), "--outage-start", &[O]),
        (o.outage_length.is_some(), "--outage-length", &[O]),
        (o.horizon.is_some(), "--horizon", &[O]),
        (o.max_retries.is_some(), "--max-retries", &[O]),
        (o.budget_ratio.is_some(), "--budget-ratio", &[O]),
        (o.budget_burst.is_some(), "--budget-burst", &[O]),
        (o.breaker_failures.is_some(), "--breaker-failures", &[O]),
        (o.breaker_cooldown.is_some(), "--breaker-cooldown", &[O]),
        (o.throttle_window.is_some(), "--throttle-window", &[O]),
        (o.throttle_k.is_some(), "--throttle-k", &[O]),
        (args.cron.splay.is_some(), "--splay", &[R]),
        (args.cron.job.is_some(), "--job", &[R]),
        (args.format == SimFormat::Svg, "--format svg", &[O, R]),
    ];
    options
        .into_iter()
        .find(|(set, _, models)| *set && !models.contains(&args.model))
        .map(|(_, flag, models)| (flag, models))
}

/// Refuses the options of the other models, and the strategies another
/// model alone has.
fn check_model(args: &SimulateArgs, given: &Given) -> Result<(), UsageError> {
    let this = model_name(args.model);
    if let Some((flag, models)) = other_model_option(args, given) {
        let hint = if flag == "--format svg" {
            " (use --plot FILE)"
        } else {
            ""
        };
        let of: Vec<String> = models
            .iter()
            .map(|&m| format!("'--model {}'", model_name(m)))
            .collect();
        return Err(UsageError(format!(
            "'{flag}' is an option of {}, not of '--model {this}'{hint}",
            of.join(" and ")
        )));
    }
    let only_other = |s: SimStrategy| match args.model {
        SimModel::Contention => matches!(
            s,
            SimStrategy::Immediate
                | SimStrategy::FullBudget
                | SimStrategy::FullBreaker
                | SimStrategy::FullThrottle
                | SimStrategy::FullBudgetThrottle
        ),
        SimModel::Overload => s == SimStrategy::Policy,
        SimModel::Cron => true,
    };
    if let Some(&s) = args.strategy.iter().find(|&&s| only_other(s)) {
        let name = s
            .to_possible_value()
            .map_or_else(String::new, |v| v.get_name().to_owned());
        let other = if s == SimStrategy::Policy {
            "contention"
        } else {
            "overload"
        };
        return Err(invalid(
            given,
            name,
            "--strategy",
            format!("a strategy of '--model {other}' only"),
        ));
    }
    Ok(())
}

/// The setup of the contention model.
fn contention(
    args: &SimulateArgs,
    given: &Given,
    seed: u64,
) -> Result<simulate::Setup, UsageError> {
    check_model(args, given)?;
    let base = args.base.unwrap_or(Duration::from_millis(5));
    let cap = args.cap.unwrap_or(Duration::from_secs(2));
    check_delays(base, cap, given)?;
    let mut strategies: Vec<simulate::Strategy> = args
        .strategy
        .iter()
        .filter_map(|s| match s {
            SimStrategy::None => Some(simulate::Strategy::None),
            SimStrategy::Exponential => Some(simulate::Strategy::Exponential),
            SimStrategy::Full => Some(simulate::Strategy::Full),
            SimStrategy::Equal => Some(simulate::Strategy::Equal),
            SimStrategy::Decorrelated => Some(simulate::Strategy::Decorrelated),
            SimStrategy::Policy => Some(simulate::Strategy::Policy),
            _ => None,
        })
        .collect();
    if strategies.is_empty() {
        strategies = simulate::Strategy::BROOKER.to_vec();
    }
    strategies.dedup();
    Ok(simulate::Setup {
        clients: args
            .clients
            .as_ref()
            .map_or_else(|| (10..=190).step_by(10).collect(), |c| c.0.clone()),
        runs: args.runs.unwrap_or(100),
        strategies,
        base,
        cap,
        policy: Policy::formula(base, cap, args.factor, args.jitter.unwrap_or(Jitter::Full)),
        seed,
    })
}

fn check_delays(base: Duration, cap: Duration, given: &Given) -> Result<(), UsageError> {
    if base.is_zero() {
        return Err(invalid(given, "0", "--base", "must be above zero"));
    }
    if base > cap {
        return Err(invalid(
            given,
            show(base),
            "--base",
            format!("greater than {}", flag_as_given(given, "--cap", cap)),
        ));
    }
    Ok(())
}

/// The setup of the overload model: the scenario's values, with those the
/// command line gives instead.
fn overload(args: &SimulateArgs, given: &Given, seed: u64) -> Result<overload::Setup, UsageError> {
    check_model(args, given)?;
    let o = &args.overload;
    let base = args.base.unwrap_or(Duration::from_millis(100));
    let cap = args.cap.unwrap_or(Duration::from_secs(30));
    check_delays(base, cap, given)?;
    let scenario = o.scenario.unwrap_or(SimScenario::Outage);
    let clients = match args.clients.as_ref().map(|c| c.0.as_slice()) {
        None => 1000,
        Some(&[n]) => n,
        Some(_) => {
            return Err(UsageError(
                "'--clients' takes one client count with '--model overload'".into(),
            ));
        }
    };
    let positive = |v: Option<f64>, default: f64, flag: &str, most: f64| match v {
        None => Ok(default),
        Some(x) if x.is_finite() && x > 0.0 && x <= most => Ok(x),
        Some(x) => Err(invalid(
            given,
            x,
            flag,
            format!("must be above 0 and at most {most}"),
        )),
    };
    let whole = |v: Option<i64>, default: u32, flag: &str, least: i64, most: i64| match v {
        None => Ok(default),
        Some(n) if (least..=most).contains(&n) => Ok(u32::try_from(n).unwrap_or(default)),
        Some(n) => Err(invalid(
            given,
            n,
            flag,
            format!("must be a whole number from {least} to {most}"),
        )),
    };
    let brownout = match o.brownout {
        None => 0.0,
        Some(f) if (0.0..=1.0).contains(&f) => f,
        Some(f) => return Err(invalid(given, f, "--brownout", "must be from 0 to 1")),
    };
    let setup = overload::Setup {
        scenario: match scenario {
            SimScenario::Outage => "outage",
            SimScenario::Metastable => "metastable",
        },
        clients,
        rate: positive(o.rate, 1.0, "--rate", 1000.0)?,
        capacity: positive(o.capacity, 2000.0, "--capacity", 1e7)?,
        queue: whole(
            o.queue,
            if scenario == SimScenario::Metastable {
                4000
            } else {
                1000
            },
            "--queue",
            0,
            10_000_000,
        )?,
        timeout: o.timeout.unwrap_or(Duration::from_secs(1)),
        brownout,
        outage_start: o.outage_start.unwrap_or(Duration::from_secs(10)),
        outage_length: o.outage_length.unwrap_or(Duration::from_secs(10)),
        horizon: o.horizon.unwrap_or(Duration::from_mins(1)),
        max_retries: whole(o.max_retries, 3, "--max-retries", 0, 100)?,
        base,
        cap,
        factor: args.factor,
        bucket: Bucket {
            burst: o.budget_burst.unwrap_or(10 * bucket::UNIT),
            ratio: o.budget_ratio.unwrap_or(bucket::UNIT / 10),
        },
        breaker: Breaker {
            failures: whole(o.breaker_failures, 5, "--breaker-failures", 1, 1_000_000)?,
            cooldown_ms: u64::try_from(
                o.breaker_cooldown
                    .unwrap_or(Duration::from_secs(5))
                    .as_millis(),
            )
            .unwrap_or(u64::MAX),
        },
        throttle: sim_throttle(o.throttle_window, o.throttle_k, given)?,
        strategies: overload_strategies(&args.strategy),
        seed,
    };
    check_overload_times(&setup, given)?;
    Ok(setup)
}

/// The setup of the cron model: `--clients` hosts (1000), `--capacity`
/// requests a second (100, at most ten million), a `--job` from 10ms to a
/// day (5s) and a `--splay` window above zero and at most `--splay`'s own
/// most (2m).
fn cron(args: &SimulateArgs, given: &Given, seed: u64) -> Result<cron::Setup, UsageError> {
    check_model(args, given)?;
    let hosts = match args.clients.as_ref().map(|c| c.0.as_slice()) {
        None => 1000,
        Some(&[n]) => n,
        Some(_) => {
            return Err(UsageError(
                "'--clients' takes one count, the hosts, with '--model cron'".into(),
            ));
        }
    };
    let capacity = match args.overload.capacity {
        None => 100.0,
        Some(c) if c.is_finite() && c > 0.0 && c <= 1e7 => c,
        Some(c) => {
            return Err(invalid(
                given,
                c,
                "--capacity",
                "must be above 0 and at most 10000000",
            ));
        }
    };
    let job = args.cron.job.unwrap_or(Duration::from_secs(5));
    if job < Duration::from_millis(10) || job > Duration::from_hours(24) {
        return Err(invalid(
            given,
            show(job),
            "--job",
            "must be from 10ms to 24h",
        ));
    }
    let splay = args.cron.splay.unwrap_or(Duration::from_mins(2));
    // The model's cron fires every hour: a wider window would mix one
    // tick's runs with the next tick's, which the model does not run.
    if splay.is_zero() || splay > cron::PERIOD {
        return Err(invalid(
            given,
            show(splay),
            "--splay",
            "must be above zero and at most 1h, the period of the model's cron (a wider window mixes one tick's runs with the next's)",
        ));
    }
    Ok(cron::Setup {
        hosts,
        capacity,
        job,
        splay,
        gates: cron::Gate::ALL.to_vec(),
        seed,
    })
}

/// The adaptive throttle of the overload model: `--throttle-window` from
/// 1s to 30 days (2m), `--throttle-k` from 1 to 1000 (2), kept in
/// thousandths.
fn sim_throttle(
    window: Option<Duration>,
    k: Option<f64>,
    given: &Given,
) -> Result<Throttle, UsageError> {
    let window = window.unwrap_or(Duration::from_mins(2));
    let window_ms = u64::try_from(window.as_millis()).unwrap_or(u64::MAX);
    if !(throttle::MIN_WINDOW_MS..=throttle::MAX_WINDOW_MS).contains(&window_ms) {
        return Err(invalid(
            given,
            show(window),
            "--throttle-window",
            "must be from 1s to 30 days",
        ));
    }
    let k = k.unwrap_or(2.0);
    #[allow(clippy::cast_precision_loss)]
    let most = (throttle::MAX_K_MILLI / 1000) as f64;
    if !(k.is_finite() && (1.0..=most).contains(&k)) {
        return Err(invalid(
            given,
            k,
            "--throttle-k",
            format!("must be from 1 to {most}"),
        ));
    }
    // From 1000 to MAX_K_MILLI: the cast loses nothing.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let k_milli = (k * 1000.0).round() as u64;
    Ok(Throttle { window_ms, k_milli })
}

/// The overload strategies asked for, or all of them.
fn overload_strategies(asked: &[SimStrategy]) -> Vec<overload::Strategy> {
    use overload::Strategy as S;
    let mut strategies: Vec<S> = asked
        .iter()
        .filter_map(|s| match s {
            SimStrategy::None => Some(S::None),
            SimStrategy::Immediate => Some(S::Immediate),
            SimStrategy::Exponential => Some(S::Exponential),
            SimStrategy::Full => Some(S::Full),
            SimStrategy::Equal => Some(S::Equal),
            SimStrategy::Decorrelated => Some(S::Decorrelated),
            SimStrategy::FullBudget => Some(S::FullBudget),
            SimStrategy::FullBreaker => Some(S::FullBreaker),
            SimStrategy::FullThrottle => Some(S::FullThrottle),
            SimStrategy::FullBudgetThrottle => Some(S::FullBudgetThrottle),
            SimStrategy::Policy => None,
        })
        .collect();
    if strategies.is_empty() {
        strategies = S::ALL.to_vec();
    }
    strategies.dedup();
    strategies
}

/// The overload model's times and sizes: a horizon from 1s to an hour, an
/// outage within it, a timeout and a cooldown of at least one tick, and at
/// most ten million requests.
fn check_overload_times(s: &overload::Setup, given: &Given) -> Result<(), UsageError> {
    let tick = Duration::from_millis(overload::TICK_MS);
    if s.horizon < Duration::from_secs(1) || s.horizon > Duration::from_hours(1) {
        return Err(invalid(
            given,
            show(s.horizon),
            "--horizon",
            "must be from 1s to 1h",
        ));
    }
    if s.outage_start + s.outage_length > s.horizon {
        return Err(invalid(
            given,
            show(s.outage_length),
            "--outage-length",
            format!(
                "an outage from {} must end within --horizon ({})",
                show(s.outage_start),
                show(s.horizon)
            ),
        ));
    }
    if s.timeout < tick {
        return Err(invalid(
            given,
            show(s.timeout),
            "--timeout",
            "must be at least 10ms",
        ));
    }
    if s.breaker.cooldown_ms < overload::TICK_MS {
        return Err(invalid(
            given,
            format!("{}ms", s.breaker.cooldown_ms),
            "--breaker-cooldown",
            "must be at least 10ms",
        ));
    }
    let requests = f64::from(s.clients) * s.rate * s.horizon.as_secs_f64();
    if requests > 1e7 {
        return Err(UsageError(format!(
            "'--clients' × '--rate' × '--horizon' makes {requests:.0} requests: at most ten million"
        )));
    }
    Ok(())
}

/// Opens the budget `key`: in Redis with `--budget-store`, else in a file
/// of `--budget-dir`; what it has to say goes to `warnings`.
pub fn open_budget(
    key: &str,
    store: &BudgetStore,
    given: &Given,
    warnings: &Warnings,
) -> Result<Store, UsageError> {
    if store.budget_ratio > store.budget_burst {
        return Err(invalid(
            given,
            bucket::show_tokens(store.budget_ratio),
            "--budget-ratio",
            "greater than --budget-burst",
        ));
    }
    let bucket = Bucket {
        burst: store.budget_burst,
        ratio: store.budget_ratio,
    };
    open_store::<Budgets>(key, &store.place, bucket, given, warnings)
}

/// Opens the shared state `key` of kind `K` with `limits`: in Redis with
/// `--budget-store`, else in a file of `--budget-dir`; what it has to say
/// goes to `warnings`.
pub fn open_store<K: Kind>(
    key: &str,
    place: &StoreArgs,
    limits: K::Limits,
    given: &Given,
    warnings: &Warnings,
) -> Result<Shared<K>, UsageError> {
    check_store(place, given)?;
    let location = match &place.budget_store {
        Some(url) => Location::Redis(url.clone()),
        // No default directory (no HOME) is not bad input: it is reported
        // when the state is used, and the fail mode decides.
        None => Location::Dir(match &place.budget_dir {
            Some(dir) => file::StateDir::Given(dir.clone()),
            None => file::default_dir(),
        }),
    };
    let settings = Settings {
        timeout: place.budget_store_timeout,
        fail: place.budget_store_fail,
        warnings: warnings.clone(),
    };
    Shared::open(key, limits, location, settings).map_err(|e| match e {
        OpenError::Key(why) => invalid(given, key, K::FLAG, why),
        OpenError::Store(why) => invalid(
            given,
            redact(place.budget_store.as_deref().unwrap_or_default()),
            "--budget-store",
            why,
        ),
    })
}

/// Checks the options of a store.
fn check_store(place: &StoreArgs, given: &Given) -> Result<(), UsageError> {
    if place.budget_store_timeout.is_zero() {
        return Err(invalid(
            given,
            "0",
            "--budget-store-timeout",
            "must be above zero",
        ));
    }
    if place.budget_store_timeout > MAX_STORE_TIMEOUT {
        return Err(invalid(
            given,
            show(place.budget_store_timeout),
            "--budget-store-timeout",
            format_args!(
                "must be at most {}: a store that has not answered by then is unavailable, and --budget-store-fail decides",
                show(MAX_STORE_TIMEOUT)
            ),
        ));
    }
    Ok(())
}

/// The limits of a throttle, from `--throttle-window` and `--throttle-k`
/// (each checked by its value parser).
pub fn throttle_limits(limits: &ThrottleLimits) -> Throttle {
    Throttle {
        window_ms: u64::try_from(limits.throttle_window.as_millis()).unwrap_or(u64::MAX),
        k_milli: limits.throttle_k,
    }
}

/// Opens `--throttle`, with its limits. `--throttle-window` and
/// `--throttle-k` without it, like the breaker's limits without
/// `--breaker`, change nothing; `--throttle` with `--until-failure`, whose
/// runs end at a failure of the command, is refused.
fn throttle(
    args: &ThrottleArgs,
    place: &StoreArgs,
    goal: Goal,
    given: &Given,
    warnings: &Warnings,
) -> Result<Option<ThrottleStore>, UsageError> {
    let Some(key) = &args.throttle else {
        return Ok(None);
    };
    if matches!(goal, Goal::Failure { .. }) {
        return Err(UsageError(
            "'--throttle' cannot be used with '--until-failure': a skipped run is no failure of the command"
                .into(),
        ));
    }
    open_store::<Throttles>(key, place, throttle_limits(&args.limits), given, warnings).map(Some)
}

/// The options that tune `--lock`, refused without it when the command
/// line gives them (a value from the environment, set for many runs, is
/// left alone).
const LOCK_TUNING: [&str; 6] = [
    "--lock-wait",
    "--lock-ttl",
    "--lock-exit",
    "--lock-fail",
    "--lock-replace",
    "--lock-limit",
];

/// Opens `--lock`. `--lock-ttl` given on the command line for a lock in a
/// file, which the kernel holds and no lease limits, is said once. A lease
/// too short for `--kill-after` is refused: a holder cut off from the store
/// could not end its attempt before the lease ran out.
fn lock(
    args: &crate::cli::LockArgs,
    key: Option<&String>,
    place: &StoreArgs,
    kill_after: Duration,
    given: &Given,
    warnings: &Warnings,
    notices: &mut Vec<String>,
) -> Result<Option<LockStore>, UsageError> {
    let Some(key) = key else {
        return match LOCK_TUNING.into_iter().find(|flag| given.wrote(flag)) {
            Some(flag) => Err(UsageError(format!(
                "{flag} applies to a lock, and there is none: add --lock KEY (at most one run of the same KEY at a time), or leave {flag} out"
            ))),
            None => Ok(None),
        };
    };
    let slots = lock_slots(args, given)?;
    let lease = crate::fleet::lock::Lease {
        ttl: args.lock_ttl,
        kill_after,
    };
    if place.budget_store.is_none() {
        if given.wrote("--lock-ttl") {
            notices.push(
                "--lock-ttl applies to a lease in Redis (--budget-store); a lock in a file is the kernel's, released whenever backoff ends".into(),
            );
        }
    } else if !lease.is_long_enough() {
        return Err(invalid(
            given,
            show(args.lock_ttl),
            "--lock-ttl",
            format_args!(
                "too short for {}: a holder cut off from the store must end its attempt before its lease can run out, with time to renew it first; give --lock-ttl {} or more, or a shorter --kill-after",
                flag_as_given(given, "--kill-after", kill_after),
                show(crate::fleet::lock::Lease::shortest_ttl(kill_after))
            ),
        ));
    }
    let limits = LockLimits {
        lease,
        fail: match args.lock_fail {
            crate::cli::LockFail::Closed => crate::store::FailMode::Closed,
            crate::cli::LockFail::Open => crate::store::FailMode::Open,
        },
        replace: args.lock_replace,
        slots,
    };
    open_store::<Locks>(key, place, limits, given, warnings).map(Some)
}

/// Opens the count of `--alert-after` N above 1, kept for the job's key:
/// `--name`, else `--lock`'s KEY; a job with neither, or a name that
/// cannot name a state, is refused with the fix. A check-in of a failure
/// that cannot be a log entry (`--ping-fail` or `--ping-start` without
/// `--ping`) is said once.
fn alert(
    cli: &Cli,
    urls: &crate::ping::Urls,
    given: &Given,
    warnings: &Warnings,
    notices: &mut Vec<String>,
) -> Result<Option<(StreakStore, u64)>, UsageError> {
    let Some(n) = cli.alert.alert_after.filter(|&n| n > 1) else {
        return Ok(None);
    };
    let key = match (&cli.output.name, &cli.lock.lock) {
        (Some(name), _) => {
            bucket::check_key(name).map_err(|why| {
                UsageError(format!(
                    "--alert-after keeps its count under the job's --name, and '{}' cannot name it: {why}; give such a --name",
                    crate::cli::quotable(name)
                ))
            })?;
            name
        }
        (None, Some(key)) => key,
        (None, None) => {
            let flag = if given.from_environment("alert_after") {
                "--alert-after (from BACKOFF_ALERT_AFTER)"
            } else {
                "--alert-after"
            };
            return Err(UsageError(format!(
                "{flag} counts the failed runs of a job, and this one has no name: add --name NAME (the same on every host that runs the job)"
            )));
        }
    };
    if urls.base.is_none() && (urls.fail.is_some() || urls.start.is_some()) {
        notices.push(
            "--alert-after: a tolerated failure sends no end check-in, since --ping-fail alerts and only --ping URL has a log entry (URL/log): give --ping URL".into(),
        );
    }
    let store = open_store::<Streaks>(key, &cli.budget.store.place, n, given, warnings)?;
    Ok(Some((store, n)))
}

/// The most runs that hold a lock at once (`--lock-limit`), checked, and
/// `--lock-replace` beside it refused: a run cannot know which of several
/// holders to end.
fn lock_slots(args: &crate::cli::LockArgs, given: &Given) -> Result<u32, UsageError> {
    let n = args.lock_limit;
    if n == 0 || n > crate::fleet::lock::MAX_SLOTS {
        return Err(invalid(
            given,
            n,
            "--lock-limit",
            format_args!(
                "at least 1 (a plain lock) and at most {} runs at once",
                crate::fleet::lock::MAX_SLOTS
            ),
        ));
    }
    if args.lock_replace && given.wrote("--lock-limit") {
        return Err(UsageError(
            "--lock-replace cannot be used with --lock-limit: with several holders there is no one run to end and take over from; leave one of them out".into(),
        ));
    }
    Ok(n)
}

/// The key of `--once-per`, which is also its lock's: `--lock`'s, else
/// `--name`'s; `None` without `--once-per`. Refused with neither, with
/// `--until-failure`, whose runs end by failing on purpose, or with
/// `--lock-limit` above 1, whose holders would each run the job.
fn once_key(cli: &Cli, goal: Goal) -> Result<Option<String>, UsageError> {
    if cli.lock.once_per.is_none() {
        return Ok(None);
    }
    if matches!(goal, Goal::Failure { .. }) {
        return Err(conflict("--once-per", "--until-failure"));
    }
    if cli.lock.lock_limit > 1 {
        return Err(UsageError(format!(
            "--once-per cannot be used with --lock-limit {}: each of the holders would find the period not done and run the job; leave --lock-limit out (--once-per takes a lock of one holder)",
            cli.lock.lock_limit
        )));
    }
    // A splay as long as the period starts one tick's runs in different
    // periods: each would find its own period not done.
    if let (Some(splay), Some(once)) = (cli.time.splay, cli.lock.once_per)
        && splay >= once.shortest()
    {
        return Err(UsageError(format!(
            "--splay {} is as long as --once-per {}'s shortest period or longer: the runs of one cron tick would start in different periods, and each would do the job; give a --splay shorter than {}",
            show(splay),
            once.name(),
            show(once.shortest()),
        )));
    }
    if let Some(key) = &cli.lock.lock {
        return Ok(Some(key.clone()));
    }
    let Some(name) = &cli.output.name else {
        return Err(UsageError(
            "'--once-per' needs the job's key: give --lock KEY (or --name NAME, which then names the job's lock and record too)".into(),
        ));
    };
    crate::fleet::bucket::check_key(name).map_err(|why| {
        UsageError(format!(
            "'--once-per' takes the job's key from --name '{name}', which cannot be one ({why}): give --lock KEY"
        ))
    })?;
    Ok(Some(name.clone()))
}

/// Opens `--once-per`'s record of `key`, in the lock's store, failing as
/// the lock does (`--lock-fail`).
fn once(
    cli: &Cli,
    key: Option<&String>,
    given: &Given,
    warnings: &Warnings,
) -> Result<Option<OnceStore>, UsageError> {
    let (Some(period), Some(key)) = (cli.lock.once_per, key) else {
        return Ok(None);
    };
    let limits = OnceLimits {
        period,
        fail: match cli.lock.lock_fail {
            crate::cli::LockFail::Closed => crate::store::FailMode::Closed,
            crate::cli::LockFail::Open => crate::store::FailMode::Open,
        },
    };
    open_store::<Onces>(key, &cli.budget.store.place, limits, given, warnings).map(Some)
}

/// Opens `--breaker`, with its limits. `--breaker` with `--until-failure`,
/// whose runs end by failing on purpose, is refused.
fn breaker(
    args: &BreakerArgs,
    place: &StoreArgs,
    goal: Goal,
    given: &Given,
    warnings: &Warnings,
) -> Result<Option<BreakerStore>, UsageError> {
    let Some(key) = &args.breaker else {
        return Ok(None);
    };
    if matches!(goal, Goal::Failure { .. }) {
        return Err(UsageError(
            "'--breaker' cannot be used with '--until-failure', whose runs end by failing on purpose"
                .into(),
        ));
    }
    if args.breaker_cooldown.is_zero() {
        return Err(invalid(
            given,
            "0",
            "--breaker-cooldown",
            "must be above zero",
        ));
    }
    let cooldown_ms = u64::try_from(args.breaker_cooldown.as_millis())
        .unwrap_or(u64::MAX)
        .max(1);
    let limits = Breaker {
        failures: args.breaker_failures,
        cooldown_ms,
    };
    open_store::<Breakers>(key, place, limits, given, warnings).map(Some)
}

/// Opens `--budget`. A `--budget-store` without it (or `--breaker`,
/// `--throttle` or `--lock`, which `shared` tells) is an error when given on the command line; from `BACKOFF_BUDGET_STORE` it is not, since a fleet
/// sets that once for every command, budgeted or not.
fn budget(
    args: &BudgetArgs,
    shared: bool,
    given: &Given,
    warnings: &Warnings,
) -> Result<Option<Store>, UsageError> {
    let Some(key) = &args.budget else {
        if given.budget_store && !shared {
            return Err(UsageError(
                "'--budget-store' needs '--budget KEY', '--breaker KEY', '--throttle KEY', '--lock KEY' or '--alert-after N'".into(),
            ));
        }
        return Ok(None);
    };
    open_budget(key, &args.store, given, warnings).map(Some)
}

/// What ends a run: `--until-failure` (which takes no retry limit) or a
/// streak of `--consecutive` successes.
fn goal(args: &GoalArgs, policy: &PolicyArgs, given: &Given) -> Result<Goal, UsageError> {
    let Some(runs) = args.until_failure else {
        return Ok(Goal::Success {
            in_a_row: args.consecutive.unwrap_or(1),
        });
    };
    let other = [
        (args.consecutive.is_some(), "--consecutive"),
        (policy.forever, "--forever"),
        (given.attempts, "--attempts"),
        (given.max_retries, "--max-retries"),
    ];
    if let Some((_, flag)) = other.iter().find(|(on, _)| *on) {
        return Err(conflict("--until-failure", flag));
    }
    Ok(Goal::Failure { runs })
}

/// What to look for in the output, if anything: `--retry-if-output`,
/// `--stop-if-output`, `--until-output`, a server's hints (with
/// `--retry-after`, its pattern, or a preset) and what the preset reads,
/// with the heads read where the preset's program puts them.
fn output_rules(
    streams: &crate::cli::StreamArgs,
    goal: &GoalArgs,
    preset: Option<Preset>,
    command: &[OsString],
    dump_headers: bool,
) -> Option<OutputRules> {
    let retry_after = streams
        .retry_after_pattern
        .clone()
        .or_else(|| (streams.retry_after || preset.is_some()).then(scan::retry_after_header));
    let rules = OutputRules::new(
        streams.retry_if_output.clone(),
        streams.stop_if_output.clone(),
        goal.until_output.clone(),
        retry_after,
        preset,
    );
    rules.map(|r| where_heads_are(r, preset, command, dump_headers))
}

/// `rules`, reading the responses' heads where the preset's program puts
/// them: when the curl preset has curl write them to a file of its own,
/// there alone (what curl prints is the body and its errors); otherwise on
/// the stream that curl's flags put them on, and wget's `-S` on stderr (its
/// log; `-O -` puts the body on stdout). On the other stream, a body's line
/// is never a status line.
fn where_heads_are(
    rules: OutputRules,
    preset: Option<Preset>,
    command: &[std::ffi::OsString],
    dump_headers: bool,
) -> OutputRules {
    match preset {
        _ if dump_headers => rules.with_headers(Headers::Elsewhere),
        Some(p @ Preset::Curl) if preset::reads(p, command) => {
            rules.with_headers(Headers::on_streams(crate::curl::header_streams(command)))
        }
        Some(p @ Preset::Wget) if preset::reads(p, command) => {
            rules.with_headers(Headers::on_streams([false, true]))
        }
        _ => rules,
    }
}

/// `--log-format`, or the format of the CI runner backoff runs under.
fn log_format(output: &OutputArgs) -> LogFormat {
    output.log_format.unwrap_or_else(|| {
        let set = |name| std::env::var(name).is_ok_and(|v| v == "true");
        if set("GITHUB_ACTIONS") {
            LogFormat::Github
        } else if set("GITLAB_CI") {
            LogFormat::Gitlab
        } else {
            LogFormat::Text
        }
    })
}

/// Where the warnings of a run go, in its log format: in text, with the
/// time and the name that start every line of the run; in json, as events
/// named as the others are (`--name`, else the program).
fn warnings(output: &OutputArgs, format: LogFormat, command: &[OsString]) -> Warnings {
    if format == LogFormat::Json {
        return Warnings::json(run_label(output.name.as_ref(), command), SystemTime::now);
    }
    let labels = Labels {
        clock: output
            .timestamps
            .then_some(SystemTime::now as fn() -> SystemTime),
        name: output.name.clone(),
    };
    if format == LogFormat::Github {
        return Warnings::github(labels);
    }
    Warnings::text(labels)
}

/// Refuses a command whose program is an empty word (`backoff ""`): no
/// program has that name.
fn not_empty(command: &[OsString]) -> Result<(), UsageError> {
    if !command.first().is_some_and(|p| p.is_empty()) {
        return Ok(());
    }
    Err(UsageError(
        if command.iter().all(|w| w.is_empty()) {
            "the command is empty"
        } else {
            "the command's program is an empty word"
        }
        .to_owned(),
    ))
}

/// What names a run in its events and reports: `--name`, else the program.
pub fn run_label(name: Option<&String>, command: &[OsString]) -> String {
    name.cloned().unwrap_or_else(|| {
        command
            .first()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default()
    })
}

/// The job's name, for `--splay`: `--name`, else the file name of the
/// program (`sync` for `/usr/local/bin/sync`), so that a job keeps its place
/// however its program is given.
pub fn job_name(name: Option<&String>, command: &[OsString]) -> String {
    name.cloned().unwrap_or_else(|| {
        let program = command.first().map(std::path::Path::new);
        program
            .and_then(|p| p.file_name())
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned()
    })
}

/// The hooks of `--on-start`, `--on-retry`, `--on-give-up` and
/// `--on-success`, and their `--hook-timeout`, which must be above zero.
fn hooks(args: &crate::cli::HookArgs, given: &Given) -> Result<Hooks, UsageError> {
    if args.hook_timeout.is_zero() {
        return Err(invalid(given, "0", "--hook-timeout", "must be above zero"));
    }
    Ok(Hooks {
        on_retry: args.on_retry.clone(),
        on_start: args.on_start.clone(),
        on_give_up: args.on_give_up.clone(),
        on_success: args.on_success.clone(),
        timeout: args.hook_timeout,
    })
}

/// Whether each attempt's stdout is held: `--hold-stdout`, or curl's body
/// going to stdout under its preset (unless it is written to a file), so
/// that a body cut mid-transfer is never followed by a second one.
fn holds_stdout(streams: &crate::cli::StreamArgs, curl_preset: bool, command: &[OsString]) -> bool {
    streams.hold_stdout
        || (curl_preset && !streams.stream_stdout && crate::curl::writes_body_to_stdout(command))
}

/// `--output on-failure`'s limit; `--output-limit` given on the command
/// line without it is refused, as it would be a promise silently off.
fn keep_output(streams: &crate::cli::StreamArgs, given: &Given) -> Result<Option<u64>, UsageError> {
    match streams.output {
        crate::output::Mode::OnFailure => Ok(Some(streams.output_limit)),
        crate::output::Mode::Live if given.wrote("--output-limit") => Err(UsageError(
            "--output-limit applies to kept output: add --output on-failure".into(),
        )),
        crate::output::Mode::Live => Ok(None),
    }
}

/// The check-ins' URLs, checked; one that sends a password in clear is
/// said once. A refusal never repeats a URL, which is a credential.
fn pings(
    args: &crate::cli::PingArgs,
    given: &Given,
    notices: &mut Vec<String>,
) -> Result<crate::ping::Urls, UsageError> {
    if args.ping_timeout.is_zero() {
        return Err(invalid(given, "0", "--ping-timeout", "must be above zero"));
    }
    let mut check = |flag: &str, url: &Option<String>| url_option(flag, url.as_deref(), notices);
    let urls = crate::ping::Urls {
        base: check("--ping", &args.ping)?,
        start: check("--ping-start", &args.ping_start)?,
        success: check("--ping-success", &args.ping_success)?,
        fail: check("--ping-fail", &args.ping_fail)?,
    };
    // A limit from BACKOFF_PING_BODY_LIMIT, set for many runs, is left
    // alone.
    if !urls.any() && given.wrote("--ping-body-limit") {
        return Err(UsageError(
            "--ping-body-limit applies to the end check-in, and there is none: add --ping URL"
                .into(),
        ));
    }
    if !urls.any() && given.wrote("--ping-timeout") {
        return Err(UsageError(
            "--ping-timeout applies to the check-ins, and there are none: add --ping URL".into(),
        ));
    }
    Ok(urls)
}

/// The URL an option (`flag`) gives, checked: an `http://` or `https://`
/// one; one that sends a password in clear is said once. A refusal never
/// repeats the URL, which is a credential.
fn url_option(
    flag: &str,
    url: Option<&str>,
    notices: &mut Vec<String>,
) -> Result<Option<crate::http::Target>, UsageError> {
    let Some(url) = url else {
        return Ok(None);
    };
    let target = crate::http::Target::parse(url)
        .map_err(|why| UsageError(format!("invalid {flag} URL: {why}")))?;
    #[cfg(not(feature = "tls"))]
    if target.is_https() {
        return Err(UsageError(format!(
            "invalid {flag} URL: {}",
            crate::http::NO_TLS
        )));
    }
    notices.extend(target.cleartext_notice(flag));
    Ok(Some(target))
}

/// `--metrics-push` and `--metrics-push-timeout`, checked.
fn metrics_push(
    args: &crate::cli::OutputArgs,
    given: &Given,
    notices: &mut Vec<String>,
) -> Result<Option<crate::push::Push>, UsageError> {
    if args.metrics_push_timeout.is_zero() {
        return Err(invalid(
            given,
            "0",
            "--metrics-push-timeout",
            "must be above zero",
        ));
    }
    let gateway = url_option("--metrics-push", args.metrics_push.as_deref(), notices)?;
    if gateway.is_none() && given.wrote("--metrics-push-timeout") {
        return Err(UsageError(
            "--metrics-push-timeout applies to the metrics push, and there is none: add --metrics-push URL"
                .into(),
        ));
    }
    Ok(gateway.map(|gateway| crate::push::Push {
        gateway,
        timeout: args.metrics_push_timeout,
    }))
}

/// The states the run shares with other processes: `--budget`,
/// `--breaker`, `--throttle` and `--lock`, opened and checked.
type SharedStates = (
    Option<Store>,
    Option<BreakerStore>,
    Option<ThrottleStore>,
    Option<LockStore>,
    Option<OnceStore>,
);

/// Opens the states the run shares (see `SharedStates`); what one of them
/// cannot do for this run goes to `notices`.
fn shared_states(
    cli: &Cli,
    goal: Goal,
    given: &Given,
    warnings: &Warnings,
    notices: &mut Vec<String>,
) -> Result<SharedStates, UsageError> {
    let place = &cli.budget.store.place;
    let once_key = once_key(cli, goal)?;
    let lock_key = cli.lock.lock.as_ref().or(once_key.as_ref());
    let shared = cli.breaker.breaker.is_some()
        || cli.throttle.throttle.is_some()
        || lock_key.is_some()
        || cli.alert.alert_after.is_some_and(|n| n > 1);
    Ok((
        budget(&cli.budget, shared, given, warnings)?,
        breaker(&cli.breaker, place, goal, given, warnings)?,
        throttle(&cli.throttle, place, goal, given, warnings)?,
        lock(
            &cli.lock,
            lock_key,
            place,
            cli.time.kill_after,
            given,
            warnings,
            notices,
        )?,
        once(cli, once_key.as_ref(), given, warnings)?,
    ))
}

/// How much the run says: `-q`, `-v` or neither.
fn verbosity(output: &crate::cli::OutputArgs) -> Verbosity {
    if output.quiet {
        Verbosity::Quiet
    } else if output.verbose {
        Verbosity::Verbose
    } else {
        Verbosity::Normal
    }
}

/// Builds the configuration of a run from the top-level command line.
pub fn run(cli: Cli, given: &Given) -> Result<RunConfig, UsageError> {
    not_empty(&cli.command)?;
    let policy = policy(&cli.policy, given)?;
    let rules = rules(&cli.rules, given)?;
    let limits = limits(&cli.time, given)?;
    let goal = goal(&cli.goal, &cli.policy, given)?;
    if cli.goal.reset_after.is_some_and(|d| d.is_zero()) {
        return Err(invalid(given, "0", "--reset-after", "must be above zero"));
    }
    let hooks = hooks(&cli.hooks, given)?;
    let streams = &cli.streams;
    let applied = preset::choose(streams.preset.map(PresetName::preset), &cli.command);
    let preset = applied.map(|a| a.preset);
    // The curl preset reads curl's own arguments when the command is curl.
    let curl_preset = preset == Some(Preset::Curl) && preset::reads(Preset::Curl, &cli.command);
    let rules = Rules {
        retry_output: !streams.retry_if_output.is_empty(),
        until_output: !cli.goal.until_output.is_empty(),
        preset,
        not_idempotent: curl_preset
            && !streams.idempotent
            && crate::curl::request_not_idempotent(&cli.command),
        ..rules
    };
    let dump_headers = curl_preset && !crate::curl::shows_headers(&cli.command);
    let output_rules = output_rules(streams, &cli.goal, preset, &cli.command, dump_headers);
    let notices = preset::notices(&preset::Setting {
        applied,
        command: &cli.command,
        attempts: crate::run::max_attempts(goal, policy.max_retries, cli.goal.reset_after),
        one_attempt: match goal {
            Goal::Failure { .. } => None,
            Goal::Success { .. } if given.attempts => Some("make backoff's --attempts 1"),
            Goal::Success { .. } if given.max_retries => Some("make backoff's --max-retries 0"),
            Goal::Success { .. } => Some(preset::ONE_ATTEMPT),
        },
        retry_after: streams.retry_after,
        pattern: streams.retry_after_pattern.is_some(),
        hold_stdout: streams.hold_stdout,
        dump_headers,
    });
    let verbosity = verbosity(&cli.output);
    let log_format = log_format(&cli.output);
    let warnings = warnings(&cli.output, log_format, &cli.command);
    let mut notices = notices;
    let (budget, breaker, throttle, lock, once) =
        shared_states(&cli, goal, given, &warnings, &mut notices)?;
    let pings = pings(&cli.ping, given, &mut notices)?;
    let metrics_push = metrics_push(&cli.output, given, &mut notices)?;
    let alert = alert(&cli, &pings, given, &warnings, &mut notices)?;
    Ok(RunConfig {
        policy,
        rules,
        goal,
        reset_after: cli.goal.reset_after,
        hooks,
        limits,
        output_rules,
        hints: Hints {
            max: streams.retry_after_max,
            jitter: streams.retry_after_jitter,
        },
        hold_stdout: holds_stdout(streams, curl_preset, &cli.command),
        preset: applied,
        preset_arguments: preset::added_arguments(preset, &cli.command),
        notices,
        dump_headers,
        replay_stdin: streams.replay_stdin,
        keep_output: keep_output(streams, given)?,
        foreground: cli.foreground,
        verbosity,
        name: cli.output.name,
        timestamps: cli.output.timestamps,
        log_format,
        warnings,
        github_step: StepFiles::from_env(|name| std::env::var_os(name)),
        budget,
        breaker,
        breaker_exit: cli.breaker.breaker_exit,
        throttle,
        lock,
        alert,
        pings,
        ping_timeout: cli.ping.ping_timeout,
        ping_body_limit: usize::try_from(cli.ping.ping_body_limit).unwrap_or(usize::MAX),
        lock_wait: cli.lock.lock_wait,
        lock_exit: cli.lock.lock_exit,
        once,
        // A job running elsewhere is no failure: 0, unless --lock-exit
        // says otherwise.
        once_exit: if given.gave("--lock-exit") {
            cli.lock.lock_exit
        } else {
            0
        },
        report: cli.output.report,
        metrics_file: cli.output.metrics_file,
        metrics_push,
        command: cli.command,
    })
}
