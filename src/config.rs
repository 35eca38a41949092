//! Checked domain types built from the command line, with the checks that
//! involve more than one flag. Errors name the flag and quote the value.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use clap::ArgMatches;
use clap::parser::ValueSource;

use crate::budget::breaker::Breaker;
use crate::budget::bucket::{self, Bucket};
use crate::budget::file::{self, FileBreaker, FileBudget};
use crate::budget::{BreakerPlace, BreakerStore, Place, Store, redact};
use crate::classify::{Preset, Rule, Rules};
use crate::cli::values::RuleList;
use crate::cli::{
    BreakerArgs, BudgetArgs, BudgetStore, Cli, GoalArgs, PolicyArgs, RuleArgs, SimulateArgs,
    StoreArgs, TimeArgs,
};
use crate::exec::scan::{self, OutputRules};
use crate::jitter::Jitter;
use crate::policy::{Policy, PolicyConfig};
use crate::report::ci::StepFiles;
use crate::report::{LogFormat, Verbosity};
use crate::run::{Goal, Hints, Hooks};
use crate::simulate;

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
fn invalid(
    given: &Given,
    value: impl fmt::Display,
    flag: &str,
    why: impl fmt::Display,
) -> UsageError {
    let source = crate::cli::flag_source(flag, |id| given.from_environment(id));
    UsageError(format!("invalid value '{value}' for {source}: {why}"))
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
    Ok(Limits {
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
    /// `--preset curl` with a curl that does not fail on HTTP errors.
    pub curl_without_fail: bool,
    /// `--preset curl` with a curl that shows no headers: the preset has it
    /// dump them to a file of backoff's own.
    pub dump_headers: bool,
    /// `--replay-stdin`.
    pub replay_stdin: bool,
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
    /// Under GitHub Actions, the step's files for its outputs and summary.
    pub github_step: Option<StepFiles>,
    /// `--report`.
    pub report: Option<PathBuf>,
    /// `--metrics-file`.
    pub metrics_file: Option<PathBuf>,
    /// `--budget`, opened and checked.
    pub budget: Option<Store>,
    /// `--breaker`, opened and checked.
    pub breaker: Option<BreakerStore>,
    /// `--breaker-exit`.
    pub breaker_exit: u8,
    /// The command and its arguments.
    pub command: Vec<OsString>,
}

fn from_command_line(m: &ArgMatches, id: &str) -> bool {
    m.value_source(id) == Some(ValueSource::CommandLine)
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
}

impl Given {
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
        }
    }

    /// For any other command (`budget`, `simulate`): `m` is the top-level
    /// matches.
    pub fn other(m: &ArgMatches) -> Given {
        Given {
            environment: from_environment(m),
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
    /// argument `id` (in a form clap did not read itself).
    #[must_use]
    pub fn with_environment(mut self, id: &str) -> Given {
        self.environment.push(id.to_owned());
        self
    }

    /// Whether the environment gave the value of the argument `id`.
    pub fn from_environment(&self, id: &str) -> bool {
        self.environment.iter().any(|e| e == id)
    }
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
                    "decorrelated jitter draws from the previous delay, not from a bound; with --delays use full, equal or none",
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
            format!("greater than --cap ({})", show(args.cap)),
        ));
    }
    if args.base.is_zero() && !(args.jitter == Jitter::None && args.cap.is_zero()) {
        return Err(invalid(
            given,
            "0",
            "--base",
            "must be above zero (for no delay at all, give --jitter none --cap 0)",
        ));
    }
    Ok(())
}

fn flatten(lists: &[RuleList]) -> Vec<Rule> {
    lists.iter().flat_map(|l| l.0.iter().copied()).collect()
}

/// Builds the classification rules, refusing an outcome that is both
/// retried and stopped.
pub fn rules(args: &RuleArgs, given: &Given) -> Result<Rules, UsageError> {
    let stop_on = flatten(&args.stop_on);
    let retry_on = flatten(&args.retry_on);
    for s in &stop_on {
        if let Some(r) = retry_on.iter().find(|r| r.overlaps(*s)) {
            return Err(invalid(
                given,
                s,
                "--stop-on",
                format!("overlaps --retry-on {r}"),
            ));
        }
    }
    Ok(Rules {
        stop_on,
        success_on: flatten(&args.success_on),
        retry_on,
        retry_output: false,
        preset: None,
        not_idempotent: false,
        until_output: false,
    })
}

/// Builds the setup of `backoff simulate`; `seed` supplies a random seed
/// when none is given.
pub fn simulation(
    args: &SimulateArgs,
    given: &Given,
    seed: fn() -> u64,
) -> Result<simulate::Setup, UsageError> {
    if args.base.is_zero() {
        return Err(invalid(given, "0", "--base", "must be above zero"));
    }
    if args.base > args.cap {
        return Err(invalid(
            given,
            show(args.base),
            "--base",
            format!("greater than --cap ({})", show(args.cap)),
        ));
    }
    let mut strategies = if args.strategy.is_empty() {
        simulate::Strategy::BROOKER.to_vec()
    } else {
        args.strategy.clone()
    };
    strategies.dedup();
    Ok(simulate::Setup {
        clients: args.clients.0.clone(),
        runs: args.runs,
        strategies,
        base: args.base,
        cap: args.cap,
        policy: Policy::formula(args.base, args.cap, args.factor, args.jitter),
        seed: args.seed.unwrap_or_else(seed),
    })
}

/// Opens the budget `key`: in Redis with `--budget-store`, else in a file
/// of `--budget-dir`.
pub fn open_budget(
    key: &str,
    store: &BudgetStore,
    ratio: u64,
    given: &Given,
) -> Result<Store, UsageError> {
    let bucket = Bucket {
        burst: store.budget_burst,
        ratio,
    };
    let place = &store.place;
    check_store(place, given)?;
    let fail = place.budget_store_fail;
    if let Some(url) = &place.budget_store {
        return redis_budget(url, key, bucket, place, given).map(|p| Store::new(p, fail));
    }
    // No default directory (no HOME) is not bad input: it is reported when
    // the budget is used, and the fail mode decides.
    let dir = place.budget_dir.clone().or_else(file::default_dir);
    FileBudget::open(dir, key, bucket, place.budget_store_timeout, fail)
        .map(|f| Store::new(Place::File(f), fail))
        .map_err(|why| invalid(given, key, "--budget", why))
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
    Ok(())
}

/// Opens the breaker `key` with `breaker`'s limits: in Redis with
/// `--budget-store`, else in a file of `--budget-dir`.
pub fn open_breaker(
    key: &str,
    place: &StoreArgs,
    breaker: Breaker,
    given: &Given,
) -> Result<BreakerStore, UsageError> {
    check_store(place, given)?;
    let fail = place.budget_store_fail;
    let timeout = place.budget_store_timeout;
    if let Some(url) = &place.budget_store {
        #[cfg(feature = "redis")]
        return crate::budget::redis::RedisBreaker::new(url, key, breaker, timeout, fail)
            .map(|r| BreakerStore::new(key, BreakerPlace::Redis(Box::new(r)), fail))
            .map_err(|why| invalid(given, redact(url), "--budget-store", why));
        #[cfg(not(feature = "redis"))]
        return Err(no_redis(url, given));
    }
    let dir = place.budget_dir.clone().or_else(file::default_dir);
    FileBreaker::open(dir, key, breaker, timeout, fail)
        .map(|f| BreakerStore::new(key, BreakerPlace::File(f), fail))
        .map_err(|why| invalid(given, key, "--breaker", why))
}

#[cfg(feature = "redis")]
fn redis_budget(
    url: &str,
    key: &str,
    bucket: Bucket,
    s: &StoreArgs,
    given: &Given,
) -> Result<Place, UsageError> {
    crate::budget::redis::RedisBudget::new(
        url,
        key,
        bucket,
        s.budget_store_timeout,
        s.budget_store_fail,
    )
    .map(|r| Place::Redis(Box::new(r)))
    .map_err(|why| invalid(given, redact(url), "--budget-store", why))
}

#[cfg(not(feature = "redis"))]
fn redis_budget(
    url: &str,
    _: &str,
    _: Bucket,
    _: &StoreArgs,
    given: &Given,
) -> Result<Place, UsageError> {
    Err(no_redis(url, given))
}

/// The error for a Redis store in a build without Redis.
#[cfg(not(feature = "redis"))]
fn no_redis(url: &str, given: &Given) -> UsageError {
    invalid(
        given,
        redact(url),
        "--budget-store",
        "this build of backoff has no Redis support (cargo feature \"redis\")",
    )
}

/// Opens `--breaker`, with its limits. `--breaker` with `--until-failure`,
/// whose runs end by failing on purpose, is refused.
fn breaker(
    args: &BreakerArgs,
    place: &StoreArgs,
    goal: Goal,
    given: &Given,
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
    open_breaker(key, place, limits, given).map(Some)
}

/// Opens `--budget`. A `--budget-store` without it (or `--breaker`, which
/// `breaker` tells) is an error when given on the command line; from `BACKOFF_BUDGET_STORE` it is not, since a fleet
/// sets that once for every command, budgeted or not.
fn budget(args: &BudgetArgs, breaker: bool, given: &Given) -> Result<Option<Store>, UsageError> {
    let Some(key) = &args.budget else {
        if given.budget_store && !breaker {
            return Err(UsageError(
                "'--budget-store' needs '--budget KEY' or '--breaker KEY'".into(),
            ));
        }
        return Ok(None);
    };
    if args.budget_ratio > args.store.budget_burst {
        return Err(invalid(
            given,
            bucket::show_tokens(args.budget_ratio),
            "--budget-ratio",
            "greater than --budget-burst",
        ));
    }
    open_budget(key, &args.store, args.budget_ratio, given).map(Some)
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

/// Builds the configuration of a run from the top-level command line.
pub fn run(cli: Cli, given: &Given) -> Result<RunConfig, UsageError> {
    let policy = policy(&cli.policy, given)?;
    let rules = rules(&cli.rules, given)?;
    let limits = limits(&cli.time, given)?;
    let goal = goal(&cli.goal, &cli.policy, given)?;
    if cli.goal.reset_after.is_some_and(|d| d.is_zero()) {
        return Err(invalid(given, "0", "--reset-after", "must be above zero"));
    }
    if cli.hooks.hook_timeout.is_zero() {
        return Err(invalid(given, "0", "--hook-timeout", "must be above zero"));
    }
    let hooks = Hooks {
        on_retry: cli.hooks.on_retry.clone(),
        on_give_up: cli.hooks.on_give_up.clone(),
        on_success: cli.hooks.on_success.clone(),
        timeout: cli.hooks.hook_timeout,
    };
    let streams = &cli.streams;
    // The curl preset reads curl's own arguments when the command is curl.
    let curl_preset = streams.preset == Some(Preset::Curl)
        && cli.command.first().is_some_and(crate::classify::is_curl);
    let rules = Rules {
        retry_output: !streams.retry_if_output.is_empty(),
        until_output: !cli.goal.until_output.is_empty(),
        preset: streams.preset,
        not_idempotent: curl_preset
            && !streams.idempotent
            && crate::classify::curl_request_not_idempotent(&cli.command),
        ..rules
    };
    let retry_after = streams.retry_after_pattern.clone().or_else(|| {
        (streams.retry_after || streams.preset.is_some()).then(scan::retry_after_header)
    });
    let output_rules = OutputRules::new(
        streams.retry_if_output.clone(),
        streams.stop_if_output.clone(),
        cli.goal.until_output.clone(),
        retry_after,
        streams.preset,
    )
    .map_err(|why| UsageError(format!("invalid output rules: {why}")))?;
    let verbosity = if cli.output.quiet {
        Verbosity::Quiet
    } else if cli.output.verbose {
        Verbosity::Verbose
    } else {
        Verbosity::Normal
    };
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
        // curl's body goes to stdout unless it is written to a file: the
        // preset holds it, so that a body cut mid-transfer is never
        // followed by a second one.
        hold_stdout: streams.hold_stdout
            || (curl_preset
                && !streams.stream_stdout
                && crate::classify::curl_writes_body_to_stdout(&cli.command)),
        curl_without_fail: curl_preset && !crate::classify::curl_fails_on_http_errors(&cli.command),
        dump_headers: curl_preset && !crate::classify::curl_shows_headers(&cli.command),
        replay_stdin: streams.replay_stdin,
        foreground: cli.foreground,
        verbosity,
        name: cli.output.name,
        timestamps: cli.output.timestamps,
        log_format: cli.output.log_format.unwrap_or_else(|| {
            let set = |name| std::env::var(name).is_ok_and(|v| v == "true");
            if set("GITHUB_ACTIONS") {
                LogFormat::Github
            } else if set("GITLAB_CI") {
                LogFormat::Gitlab
            } else {
                LogFormat::Text
            }
        }),
        github_step: StepFiles::from_env(|name| std::env::var_os(name)),
        budget: budget(&cli.budget, cli.breaker.breaker.is_some(), given)?,
        breaker: breaker(&cli.breaker, &cli.budget.store.place, goal, given)?,
        breaker_exit: cli.breaker.breaker_exit,
        report: cli.output.report,
        metrics_file: cli.output.metrics_file,
        command: cli.command,
    })
}
