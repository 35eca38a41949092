//! The command line as clap sees it: plain types, value parsers and help text.
//! Cross-flag checks live in `config`, which turns these into checked types.

// Doc comments here are the help text people read, not Rust documentation.
#![allow(clippy::doc_markdown)]

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum, ValueHint};

use regex::bytes::Regex;

use crate::classify::Preset;
use crate::jitter::Jitter;
use crate::report::LogFormat;
use crate::store::FailMode;

pub mod advice;
pub mod values;

use values::{ClientCounts, DelayList, RuleList};

const AFTER_HELP: &str = "\
Exit status: 0 if an attempt succeeded; the last attempt's exit code when
retries run out or a stop rule matches (with --until-failure, the failure
found's); 1 when an --until-output condition or a --consecutive streak was
not met; death by the same signal when the last attempt was killed by one
(or backoff was interrupted); 75 an open --breaker circuit or the --lock
(held by another run, unavailable, lost, or taken over by --lock-replace)
stopped the command, or
--throttle skipped every attempt (--breaker-exit and --lock-exit change
it); 124 timeout; 125 backoff itself failed (bad usage); 126 command cannot
be run; 127 command not found.

Traces: with OTEL_EXPORTER_OTLP_ENDPOINT set, the run and each attempt are
OpenTelemetry spans sent over OTLP/HTTP, and each attempt's command sees
TRACEPARENT naming its span (the OTEL_* variables: man backoff, TRACES).

Examples:
  backoff -- curl -fsS https://api.example.test/
  backoff --base 1s --cap 1m --max-retries 10 -- ./deploy.sh
  backoff --retry-on 75 --stop-on 2 -- make fetch
  backoff schedule --jitter none --base 100ms --cap 30s";

/// What `-h` ends with: a few examples, and where the rest is.
const AFTER_SHORT_HELP: &str = "\
Options go before the command: backoff --max-retries 3 -- curl -fsS URL
A short list: 'backoff --help' gives every option, 'man backoff' the details.";

/// The options `-h` shows, by id: those most runs need. `--help` and the
/// man page show every option.
pub const SHORT_HELP: &[&str] = &[
    "max_retries",
    "base",
    "cap",
    "jitter",
    "retry_on",
    "stop_on",
    "until_output",
    "timeout",
    "max_time",
    "splay",
    "preset",
    "output",
    "budget",
    "breaker",
    "throttle",
    "lock",
    "ping",
    "quiet",
    "verbose",
    "name",
    "report",
];

/// `arg` as `-h` shows it: hidden unless it is one of `SHORT_HELP`. A
/// hidden one keeps its text as its long help, where the man page looks for
/// it (clap_mangen shows no short help that `-h` hides).
fn in_short_help(arg: clap::Arg) -> clap::Arg {
    if SHORT_HELP.contains(&arg.get_id().as_str()) {
        return arg;
    }
    match arg.get_long_help().or(arg.get_help()).cloned() {
        Some(long) => arg.hide_short_help(true).long_help(long),
        None => arg.hide_short_help(true),
    }
}

/// The heading of `--budget`, `--breaker` and `--throttle`, which `-h`
/// shows without the options that tune them.
const SHARED: &str = "Shared by processes";

/// The usage line of `-h`, `--help` and the man page: every subcommand.
pub const USAGE: &str = "\
backoff [OPTIONS] [--] COMMAND [ARGS]...
       backoff schedule|simulate [OPTIONS]
       backoff budget|breaker|throttle|lock|once show|reset KEY [OPTIONS]";

/// Run a command and retry it with capped exponential backoff and jitter.
///
/// backoff runs COMMAND; when it fails in a way worth retrying, backoff runs
/// it again after a delay drawn from a capped exponential bound with jitter,
/// so that many clients that failed together do not retry together. The
/// command runs directly, never through a shell, in its own process group.
#[derive(Debug, Parser)]
#[command(
    name = "backoff",
    version,
    after_help = AFTER_SHORT_HELP,
    after_long_help = AFTER_HELP,
    args_conflicts_with_subcommands = true,
    disable_help_subcommand = true,
    subcommand_negates_reqs = true,
    subcommand_value_name = "SUBCOMMAND",
    subcommand_help_heading = "Subcommands",
    override_usage = USAGE,
    mut_args = in_short_help
)]
pub struct Cli {
    #[command(flatten)]
    pub policy: PolicyArgs,

    #[command(flatten)]
    pub rules: RuleArgs,

    #[command(flatten)]
    pub goal: GoalArgs,

    #[command(flatten)]
    pub hooks: HookArgs,

    #[command(flatten)]
    pub time: TimeArgs,

    #[command(flatten)]
    pub streams: StreamArgs,

    #[command(flatten)]
    pub budget: BudgetArgs,

    #[command(flatten)]
    pub breaker: BreakerArgs,

    #[command(flatten)]
    pub throttle: ThrottleArgs,

    #[command(flatten)]
    pub lock: LockArgs,

    #[command(flatten)]
    pub ping: PingArgs,

    #[command(flatten)]
    pub alert: AlertArgs,

    #[command(flatten)]
    pub output: OutputArgs,

    /// Keep the command in backoff's process group, for programs that need
    /// the terminal; then signals reach only the command itself, not the
    /// processes it started.
    #[arg(long, help_heading = "Processes")]
    pub foreground: bool,

    /// Print a man page or a shell's completion script, and run nothing
    ///
    /// For a binary installed with cargo install: the man pages go beside
    /// it, in ${CARGO_HOME:-~/.cargo}/share/man/man1 (backoff.1,
    /// backoff-budget.1, ...), where man finds them from PATH; bash's
    /// script in ~/.local/share/bash-completion/completions/backoff.
    #[arg(long, value_enum, value_name = "KIND", help_heading = "Installation")]
    pub generate: Option<Generate>,

    /// The command to run and its arguments. Everything from the first
    /// argument that is not an option belongs to the command.
    #[arg(
        value_name = "COMMAND",
        help_heading = "Command",
        required_unless_present = "generate",
        num_args = 1..,
        trailing_var_arg = true,
        value_hint = ValueHint::CommandWithArguments,
        value_parser = clap::value_parser!(OsString),
    )]
    pub command: Vec<OsString>,

    #[command(subcommand)]
    pub subcommand: Option<Sub>,
}

/// What `--generate` prints: a man page, or a shell's completion script.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Generate {
    /// backoff(1)
    Man,
    /// backoff-schedule(1)
    ManSchedule,
    /// backoff-simulate(1)
    ManSimulate,
    /// backoff-budget(1)
    ManBudget,
    /// backoff-breaker(1)
    ManBreaker,
    /// backoff-throttle(1)
    ManThrottle,
    /// backoff-lock(1)
    ManLock,
    /// backoff-once(1)
    ManOnce,
    /// bash's (with bash-completion)
    CompleteBash,
    /// zsh's
    CompleteZsh,
    /// fish's
    CompleteFish,
    /// PowerShell's
    #[value(name = "complete-powershell")]
    CompletePowerShell,
    /// elvish's
    CompleteElvish,
}

/// backoff's subcommands. A program of the same name runs with `backoff --
/// NAME`.
///
/// Their options are built only for the subcommand a command line names
/// (and for the man pages and completions, which build them all): a run
/// does not pay for them. Inspect a subcommand's options after
/// `Command::build`. The structs of options that a subcommand holds have
/// plain comments, not doc comments: clap would make a doc comment the
/// subcommand's description when it builds them, in place of the one here.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Sub {
    /// Print the delays a policy produces, and run nothing
    ///
    /// For each retry: the exponential bound, the range the delay is drawn
    /// from under the chosen jitter, its mean, and the cumulative worst-case
    /// and mean waiting time. With --seed, also the delays one run would
    /// draw.
    Schedule(ScheduleArgs),
    /// Show why jitter matters, and what retries and a fleet's cron do to a
    /// server
    ///
    /// M. Brooker's "Exponential Backoff And Jitter" (AWS Architecture Blog,
    /// 2015): N clients contend to update one row under optimistic
    /// concurrency; every message takes |Normal(10ms, 2ms)|; a client whose
    /// write lost reads again after its strategy's delay. Prints, per client
    /// count and strategy, the mean and spread over the runs of the server's
    /// write calls and of the time the last client succeeded, then draws
    /// them.
    ///
    /// With --model overload: clients at a steady rate, a server of fixed
    /// capacity, an outage, and retries with or without a shared budget,
    /// breaker or adaptive throttle. Prints, per strategy, the amplification during the outage,
    /// the goodput and the time to recover (see the man page's SIMULATION).
    ///
    /// With --model cron: hosts whose cron fires one job at :00, run plainly,
    /// with --splay, --lock and --once-per. Prints, per way, the runs in the
    /// period and the peak requests a second to the service and to the
    /// store.
    Simulate(Box<SimulateArgs>),
    /// Show or reset a retry budget shared by processes (see --budget)
    #[command(subcommand)]
    Budget(BudgetCommand),
    /// Show or reset a circuit breaker shared by processes (see --breaker)
    #[command(subcommand)]
    Breaker(BreakerCommand),
    /// Show or reset a throttle shared by processes (see --throttle)
    #[command(subcommand)]
    Throttle(ThrottleCommand),
    /// Show or reset a lock held by runs (see --lock)
    #[command(subcommand)]
    Lock(LockCommand),
    /// Show or reset a job's last success (see --once-per)
    #[command(subcommand)]
    Once(OnceCommand),
}

// Options of `backoff simulate`.
#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// The model: Brooker's experiment, a server past its capacity, or a
    /// fleet's cron
    #[arg(long, value_enum, value_name = "MODEL", default_value = "contention")]
    pub model: SimModel,

    /// Client counts: a list (10,50,100) or a range with a step
    /// (10-190/10); the overload and cron models take one count (cron: the
    /// hosts) [default: 10-190/10; overload, cron: 1000]
    #[arg(long, value_name = "LIST", value_parser = values::client_counts)]
    pub clients: Option<ClientCounts>,

    /// Runs per client count and strategy (contention) [default: 100]
    #[arg(long, value_name = "N", value_parser = values::runs)]
    pub runs: Option<u32>,

    /// Strategies, comma-separated [default: contention: none, exponential,
    /// full, equal, decorrelated; overload: all but policy]
    #[arg(long, value_enum, value_name = "LIST", value_delimiter = ',')]
    pub strategy: Vec<SimStrategy>,

    /// Base of the delays [default: Brooker's 5ms; overload: 100ms]
    #[arg(long, value_name = "DURATION", value_parser = values::duration,
          allow_hyphen_values = true)]
    pub base: Option<Duration>,

    /// Cap of the delays [default: Brooker's 2s; overload: 30s]
    #[arg(long, value_name = "DURATION", value_parser = values::duration,
          allow_hyphen_values = true)]
    pub cap: Option<Duration>,

    /// Growth per retry of the "policy" strategy, and of every overload
    /// strategy.
    #[arg(long, value_name = "F", default_value = "2", value_parser = values::factor,
          allow_hyphen_values = true)]
    pub factor: f64,

    /// Jitter of the "policy" strategy (contention) [default: full]
    #[arg(long, value_enum, value_name = "KIND", ignore_case = true)]
    pub jitter: Option<Jitter>,

    /// Seed of the simulation: same seed, same output [default: random]
    #[arg(long, value_name = "U64", value_parser = values::seed)]
    pub seed: Option<u64>,

    /// Output format; a contention table is followed by a terminal chart.
    #[arg(long, value_enum, default_value = "table")]
    pub format: SimFormat,

    /// Also draw the charts into an SVG file, replaced whole or left as it
    /// was (a temporary file renamed over it), and only a regular file.
    #[arg(long, value_name = "FILE", value_parser = values::output_file)]
    pub plot: Option<PathBuf>,

    #[command(flatten)]
    pub overload: OverloadArgs,

    #[command(flatten)]
    pub cron: CronArgs,
}

// The options of `backoff simulate --model cron` (see the man page's
// SIMULATION for the model); --clients is its hosts, --capacity its
// service's.
#[derive(Debug, Args)]
#[command(next_help_heading = "Cron model")]
pub struct CronArgs {
    /// The --splay window: each host waits its own place in it, as the
    /// real --splay places the host; at most 1h, the cron's period
    /// [default: 2m]
    #[arg(long, value_name = "DURATION", value_parser = values::duration,
          allow_hyphen_values = true)]
    pub splay: Option<Duration>,

    /// How long a run of the job lasts once the service has answered its
    /// request [default: 5s]
    #[arg(long, value_name = "DURATION", value_parser = values::duration,
          allow_hyphen_values = true)]
    pub job: Option<Duration>,
}

// The options of `backoff simulate --model overload` (see the man page's
// SIMULATION for the model). Each defaults to its --scenario's value.
#[derive(Debug, Args)]
#[command(next_help_heading = "Overload model")]
pub struct OverloadArgs {
    /// A set of the values below, each of which may be given instead
    /// [default: outage]
    #[arg(long, value_enum, value_name = "NAME")]
    pub scenario: Option<SimScenario>,

    /// Requests a second each client makes, at a fixed interval [default: 1]
    #[arg(long, value_name = "R", allow_hyphen_values = true)]
    pub rate: Option<f64>,

    /// Attempts a second the server works through; with --model cron,
    /// requests a second the service answers [default: 2000; cron: 100]
    #[arg(long, value_name = "R", allow_hyphen_values = true)]
    pub capacity: Option<f64>,

    /// Most attempts waiting in the server's queue; more are refused at
    /// once [default: 1000; metastable: 4000]
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub queue: Option<i64>,

    /// How long a client waits for an attempt's answer [default: 1s]
    #[arg(long, value_name = "DURATION", value_parser = values::duration,
          allow_hyphen_values = true)]
    pub timeout: Option<Duration>,

    /// The share of the capacity left during the outage, from 0 (none) to
    /// 1 [default: 0]
    #[arg(long, value_name = "F", allow_hyphen_values = true)]
    pub brownout: Option<f64>,

    /// When the capacity drops [default: 10s]
    #[arg(long, value_name = "DURATION", value_parser = values::duration,
          allow_hyphen_values = true)]
    pub outage_start: Option<Duration>,

    /// How long it stays down [default: 10s]
    #[arg(long, value_name = "DURATION", value_parser = values::duration,
          allow_hyphen_values = true)]
    pub outage_length: Option<Duration>,

    /// How long the simulation runs [default: 60s]
    #[arg(long, value_name = "DURATION", value_parser = values::duration,
          allow_hyphen_values = true)]
    pub horizon: Option<Duration>,

    /// Retries after a request's first attempt [default: 3]
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub max_retries: Option<i64>,

    /// Tokens a success deposits in the budget of "full+budget", one for
    /// all clients [default: 0.1]
    #[arg(long, value_name = "R", value_parser = values::ratio, allow_hyphen_values = true)]
    pub budget_ratio: Option<u64>,

    /// Most tokens that budget holds, and starts with [default: 10]
    #[arg(long, value_name = "N", value_parser = values::burst, allow_hyphen_values = true)]
    pub budget_burst: Option<u64>,

    /// Requests in a row that gave up that open the breaker of
    /// "full+breaker", one for all clients [default: 5]
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub breaker_failures: Option<i64>,

    /// How long that breaker stays open before a probe [default: 5s]
    #[arg(long, value_name = "DURATION", value_parser = values::duration,
          allow_hyphen_values = true)]
    pub breaker_cooldown: Option<Duration>,

    /// The window over which the adaptive throttle of "full+throttle" and
    /// "full+budget+throttle", one for all clients, counts requests and
    /// accepts, from 1s to 30 days [default: 2m]
    #[arg(long, value_name = "DURATION", value_parser = values::duration,
          allow_hyphen_values = true)]
    pub throttle_window: Option<Duration>,

    /// That throttle's K, from 1 to 1000: it skips attempts when the
    /// requests pass K times the accepts [default: 2]
    #[arg(long, value_name = "K", allow_hyphen_values = true)]
    pub throttle_k: Option<f64>,
}

/// The models of `backoff simulate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SimModel {
    /// Brooker's experiment: clients contend to update one row.
    Contention,
    /// Clients at a steady rate, a server of fixed capacity, an outage.
    Overload,
    /// Hosts whose cron fires one job at :00: --splay, --lock, --once-per.
    Cron,
}

/// The preset parameter sets of the overload model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SimScenario {
    /// A full outage of 10s that the server survives.
    Outage,
    /// The same outage and a deeper queue: the overload outlives it.
    Metastable,
}

/// The strategies of `backoff simulate`, of either model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SimStrategy {
    /// No backoff: contention reads again at once; overload does not retry.
    None,
    /// Overload: retries at once, with no delay.
    Immediate,
    /// e = min(cap, base · 2^n), no jitter.
    Exponential,
    /// Uniform in [0, e).
    Full,
    /// e/2 plus uniform in [0, e/2).
    Equal,
    /// min(cap, uniform in [base, 3 · previous sleep)), from base.
    Decorrelated,
    /// Contention: backoff's own policy, from --base, --cap, --factor and
    /// --jitter.
    Policy,
    /// Overload: full jitter under a retry budget shared by all clients.
    #[value(name = "full+budget")]
    FullBudget,
    /// Overload: full jitter behind a circuit breaker shared by all clients.
    #[value(name = "full+breaker")]
    FullBreaker,
    /// Overload: full jitter behind an adaptive throttle shared by all
    /// clients.
    #[value(name = "full+throttle")]
    FullThrottle,
    /// Overload: full jitter under the shared retry budget, behind the
    /// shared adaptive throttle.
    #[value(name = "full+budget+throttle")]
    FullBudgetThrottle,
}

/// What `--preset` names: a preset, or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PresetName {
    /// HTTP retry semantics for curl: transient transport failures and
    /// HTTP 408, 425, 429 and 5xx are retried, other 4xx are not.
    Curl,
    /// The same for wget: network failures (exit 4), protocol errors (7),
    /// and server errors (8) of HTTP 408, 425, 429 and 5xx are retried.
    Wget,
    /// git's transient failures (the network, the server, a connection cut
    /// short, HTTP 429 and 5xx) are retried; a missing repository, failed
    /// authentication or a conflict is not.
    Git,
    /// No preset, not even the one of the program's name.
    None,
}

impl PresetName {
    /// The preset named; `None` for `none`.
    pub fn preset(self) -> Option<Preset> {
        match self {
            PresetName::Curl => Some(Preset::Curl),
            PresetName::Wget => Some(Preset::Wget),
            PresetName::Git => Some(Preset::Git),
            PresetName::None => None,
        }
    }
}

/// Output formats of `simulate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SimFormat {
    /// Aligned columns for people.
    Table,
    /// One JSON document.
    Json,
    /// Comma-separated values with a header line.
    Csv,
    /// The overload or cron model's chart, as SVG on stdout.
    Svg,
}

/// `backoff budget show|reset KEY`.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum BudgetCommand {
    /// Print the tokens left in a budget, and the burst and ratio its state
    /// records (else those of the options, said to be theirs).
    Show {
        /// The budget's key.
        #[arg(value_name = "KEY", value_parser = values::budget_key)]
        key: String,
        #[command(flatten)]
        store: BudgetStore,
        /// Output format.
        #[arg(long, value_enum, default_value = "text")]
        format: BudgetFormat,
    },
    /// Fill a budget to its burst again: the one its state records, or
    /// with --budget-burst or --budget-ratio those given; say what it held.
    Reset {
        /// The budget's key.
        #[arg(value_name = "KEY", value_parser = values::budget_key)]
        key: String,
        #[command(flatten)]
        store: BudgetStore,
        /// Output format: a line on stderr, or one JSON object on stdout.
        #[arg(long, value_enum, default_value = "text")]
        format: BudgetFormat,
    },
}

/// Output formats of `show` and `reset` of budgets, breakers and
/// throttles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BudgetFormat {
    /// One line for people.
    Text,
    /// One JSON object.
    Json,
}

// Where a budget lives and how big it is.
#[derive(Debug, Clone, Args)]
pub struct BudgetStore {
    /// Tokens a success deposits
    #[arg(long, value_name = "R", value_parser = values::ratio, allow_hyphen_values = true, default_value = "0.1")]
    pub budget_ratio: u64,

    /// Most tokens a budget holds, and starts with
    #[arg(long, value_name = "N", value_parser = values::burst, allow_hyphen_values = true, default_value = "10")]
    pub budget_burst: u64,

    #[command(flatten)]
    pub place: StoreArgs,
}

// Where budgets, breakers and throttles live, and what to do when that
// store cannot be used.
#[derive(Debug, Clone, Args)]
pub struct StoreArgs {
    /// Directory of the budgets', breakers' and throttles' state files
    /// [default: $XDG_STATE_HOME/backoff, else ~/.local/state/backoff]
    #[arg(long, value_name = "DIR")]
    pub budget_dir: Option<PathBuf>,

    /// Keep budgets, breakers and throttles in Redis, shared by a fleet of hosts:
    /// redis://[user:password@]host[:port][/db], rediss:// for TLS,
    /// redis+unix:///path/to/socket[?db=N] for a Unix socket, or
    /// redis+cluster://host:port,host:port for a Redis Cluster (better given
    /// in the environment, where the password does not show in process
    /// lists).
    #[arg(
        long,
        value_name = "URL",
        env = "BACKOFF_BUDGET_STORE",
        hide_env_values = true
    )]
    pub budget_store: Option<String>,

    /// How long a budget, breaker, throttle or lock decision may wait: for
    /// the Redis store, or for the lock of a state file; then
    /// --budget-store-fail (--lock-fail for a lock) decides (at most 1m)
    #[arg(long, value_name = "DURATION", value_parser = values::duration,
          allow_hyphen_values = true,
        default_value = "250ms")]
    pub budget_store_timeout: Duration,

    /// When the store cannot be reached or trusted, or does not answer in
    /// time: retry under the local policy alone, run the command and send
    /// the attempt (open), or do not retry, with --breaker do not run the
    /// command, and with --throttle skip the attempt (closed). A lock has
    /// its own: --lock-fail
    #[arg(long, value_enum, value_name = "MODE", default_value = "open")]
    pub budget_store_fail: FailMode,
}

/// The retry budget of a run.
#[derive(Debug, Args)]
#[command(next_help_heading = "Retry budget")]
pub struct BudgetArgs {
    /// Share a retry budget with the backoff processes of the same KEY
    ///
    /// Each retry takes a token, each success deposits --budget-ratio of
    /// one; with no token left, backoff does not retry. First attempts are
    /// never blocked.
    #[arg(long, value_name = "KEY", value_parser = values::budget_key,
          help_heading = SHARED)]
    pub budget: Option<String>,

    #[command(flatten)]
    pub store: BudgetStore,
}

/// The circuit breaker of a run.
#[derive(Debug, Args)]
#[command(next_help_heading = "Circuit breaker")]
pub struct BreakerArgs {
    /// Share a circuit breaker with the backoff processes of the same KEY
    ///
    /// In the store of the budgets (--budget-dir or --budget-store): after
    /// --breaker-failures runs in a row that gave up, the circuit is open
    /// and runs end at once without running the command; after
    /// --breaker-cooldown one run probes without retries, and its success
    /// closes the circuit.
    #[arg(long, value_name = "KEY", value_parser = values::budget_key,
          help_heading = SHARED)]
    pub breaker: Option<String>,

    /// Runs in a row that gave up that open the circuit
    #[arg(long, value_name = "N", default_value = "5", value_parser = values::breaker_failures)]
    pub breaker_failures: u32,

    /// How long an open circuit stays open before a probe
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = values::duration,
          allow_hyphen_values = true)]
    pub breaker_cooldown: Duration,

    /// Exit status of a run that an open circuit does not let run the
    /// command (75, EX_TEMPFAIL: try again later)
    #[arg(long, value_name = "N", default_value = "75", value_parser = clap::value_parser!(u8))]
    pub breaker_exit: u8,
}

/// `backoff breaker show|reset KEY`.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum BreakerCommand {
    /// Print a circuit's state: closed, open (since and until when) or
    /// half-open.
    Show {
        /// The breaker's key.
        #[arg(value_name = "KEY", value_parser = values::budget_key)]
        key: String,
        #[command(flatten)]
        store: StoreArgs,
        /// Output format.
        #[arg(long, value_enum, default_value = "text")]
        format: BudgetFormat,
    },
    /// Close a circuit, and start its count of failed runs again; say what
    /// it was.
    Reset {
        /// The breaker's key.
        #[arg(value_name = "KEY", value_parser = values::budget_key)]
        key: String,
        #[command(flatten)]
        store: StoreArgs,
        /// Output format: a line on stderr, or one JSON object on stdout.
        #[arg(long, value_enum, default_value = "text")]
        format: BudgetFormat,
    },
}

/// The adaptive throttle of a run.
#[derive(Debug, Args)]
#[command(next_help_heading = "Adaptive throttle")]
pub struct ThrottleArgs {
    /// Share an adaptive throttle with the backoff processes of the same KEY
    ///
    /// In the store of the budgets (--budget-dir or --budget-store): over
    /// --throttle-window, the fleet counts the attempts it wanted to make
    /// and those the backend accepted, and skips each new attempt with
    /// probability max(0, (requests - K × accepts) / (requests + 1)).
    #[arg(long, value_name = "KEY", value_parser = values::budget_key,
          help_heading = SHARED)]
    pub throttle: Option<String>,

    #[command(flatten)]
    pub limits: ThrottleLimits,
}

// The window and K of an adaptive throttle.
#[derive(Debug, Clone, Args)]
pub struct ThrottleLimits {
    /// The span of time the throttle counts over (from 1s to 30d)
    #[arg(long, value_name = "DURATION", default_value = "2m",
          value_parser = values::throttle_window, allow_hyphen_values = true)]
    pub throttle_window: Duration,

    /// K: nothing is skipped while the backend accepts more than one
    /// attempt in K, and the fleet sends about K times what it accepts
    /// (from 1 to 1000, at most three decimals)
    #[arg(long, value_name = "K", default_value = "2",
          value_parser = values::throttle_k, allow_hyphen_values = true)]
    pub throttle_k: u64,
}

/// `backoff throttle show|reset KEY`.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum ThrottleCommand {
    /// Print a throttle's counts over its window (requests, of which
    /// skipped, and accepts), and the probability that the next attempt is
    /// skipped under --throttle-k.
    Show {
        /// The throttle's key.
        #[arg(value_name = "KEY", value_parser = values::budget_key)]
        key: String,
        #[command(flatten)]
        store: StoreArgs,
        #[command(flatten)]
        limits: ThrottleLimits,
        /// Output format.
        #[arg(long, value_enum, default_value = "text")]
        format: BudgetFormat,
    },
    /// Empty a throttle's window: nothing counted, nothing skipped; say
    /// what it held.
    Reset {
        /// The throttle's key.
        #[arg(value_name = "KEY", value_parser = values::budget_key)]
        key: String,
        #[command(flatten)]
        store: StoreArgs,
        /// Output format: a line on stderr, or one JSON object on stdout.
        #[arg(long, value_enum, default_value = "text")]
        format: BudgetFormat,
    },
}

/// The lock of a run.
#[derive(Debug, Args)]
#[command(next_help_heading = "Lock")]
pub struct LockArgs {
    /// At most one run of the same KEY at a time
    ///
    /// A run that finds it held does not run the command. In the store of the budgets: a file locked by the kernel on this
    /// host (--budget-dir), or a lease in Redis for a fleet
    /// (--budget-store), held from the end of --splay to the end of the
    /// run. A run that finds it held says who holds it and exits
    /// --lock-exit. See LOCKS.
    #[arg(long, value_name = "KEY", value_parser = values::budget_key,
          help_heading = SHARED)]
    pub lock: Option<String>,

    /// How long a run waits in turn for a held lock before it gives up
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = values::duration,
          allow_hyphen_values = true)]
    pub lock_wait: Duration,

    /// Exit status of a run that finds the lock held (75, EX_TEMPFAIL)
    #[arg(long, value_name = "N", default_value = "75", value_parser = clap::value_parser!(u8))]
    pub lock_exit: u8,

    /// At most one successful run of the job per PERIOD, across every
    /// host sharing the store
    ///
    /// PERIOD: hour, day, week or month of the local clock (TZ), or a
    /// DURATION from 1m to a year (a sliding window). The key is --lock's,
    /// else --name's; the run takes that lock and skips (0, silent) when
    /// the period is done (reason done) or the lock is held (reason
    /// running). A failure records nothing. Not with --lock-limit above
    /// 1. See ONCE PER PERIOD.
    #[arg(long, value_name = "PERIOD", value_parser = values::once_per,
          env = "BACKOFF_ONCE_PER", hide_env_values = true, help_heading = SHARED,
          allow_hyphen_values = true)]
    pub once_per: Option<crate::fleet::once::Period>,

    /// How long a lease in Redis lasts unless renewed; the run renews it
    /// every third of that
    ///
    /// From 1s to 24h, and long enough for a holder cut off from the store
    /// to end its attempt (--kill-after) before the lease can run out:
    /// about twice --kill-after, plus a little. See LOCKS.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = values::lock_ttl,
          allow_hyphen_values = true)]
    pub lock_ttl: Duration,

    /// When the lock cannot be had for certain (its store cannot be
    /// reached, trusted or used): do not run the command and exit 75
    /// (closed), or run it without the lock (open); either is said on a
    /// line that no output mode hides
    #[arg(long, value_enum, value_name = "MODE", default_value = "closed")]
    pub lock_fail: LockFail,

    /// End the run that holds the lock and take it over (Kubernetes'
    /// Replace)
    ///
    /// The holder ends its attempt as on a timeout (--signal, then SIGKILL
    /// after --kill-after) and gives up with reason replaced and status
    /// 75: on this host within 200ms, in Redis at its next renewal (within
    /// a third of --lock-ttl). This run's first attempt starts once the
    /// holder has let go, or its lease has run out. A holder of another
    /// user is not ended. See LOCKS.
    #[arg(long)]
    pub lock_replace: bool,

    /// At most N runs hold KEY at once, each in a slot of its own (a
    /// counting semaphore); 1 is a plain lock
    ///
    /// The run that finds every slot taken skips (--lock-exit) or waits
    /// (--lock-wait). Give every run of a KEY the same N. From 1 to 1000.
    /// See LOCKS.
    #[arg(long, value_name = "N", default_value = "1", value_parser = clap::value_parser!(u32))]
    pub lock_limit: u32,
}

/// `--lock-fail`: what a lock that cannot be had for certain becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LockFail {
    /// Do not run the command: exit 75, reason lock_unavailable.
    Closed,
    /// Run the command without the lock, and say so.
    Open,
}

/// Check-ins with a monitor.
#[derive(Debug, Args)]
#[command(next_help_heading = "Check-ins")]
pub struct PingArgs {
    /// Tell a monitor (healthchecks.io) the run's start and end
    ///
    /// URL is that of a check of a monitor that speaks the
    /// healthchecks.io protocol. A GET of URL/start when the run starts, then a POST of URL when it
    /// succeeds, or URL/N with backoff's exit status N, whose body is a
    /// summary line and the end of the final attempt's output, within
    /// --ping-body-limit; each with ?rid=BACKOFF_RUN_ID. A check-in never
    /// changes the exit status. See CHECK-INS.
    #[arg(long, value_name = "URL", env = "BACKOFF_PING", hide_env_values = true)]
    pub ping: Option<String>,

    /// The URL of the start check-in, as given (overrides --ping's)
    #[arg(long, value_name = "URL")]
    pub ping_start: Option<String>,

    /// The URL of the check-in of a success, as given (overrides --ping's)
    #[arg(long, value_name = "URL")]
    pub ping_success: Option<String>,

    /// The URL of the check-in of any other end, as given (overrides
    /// --ping's)
    #[arg(long, value_name = "URL")]
    pub ping_fail: Option<String>,

    /// The longest the check-ins delay the end of the run, in all, retries
    /// included
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = values::duration,
          allow_hyphen_values = true)]
    pub ping_timeout: Duration,

    /// The most bytes of the end check-in's body: its summary line, then
    /// the end of the output, cut at its front
    ///
    /// What a self-hosted Healthchecks keeps of a body (its first
    /// PING_BODY_LIMIT bytes, 10000 by default); a smaller Ping-Body-Limit
    /// in the monitor's answer to the start check-in lowers it. Cut output
    /// is said in a line after the summary line. 0 sends the summary line
    /// alone. B, KB (1000), KiB (1024), MB, MiB; at most 10MB.
    #[arg(long, value_name = "SIZE", default_value = "10000", value_parser = values::ping_body_limit,
          env = "BACKOFF_PING_BODY_LIMIT", hide_env_values = true, allow_hyphen_values = true)]
    pub ping_body_limit: u64,
}

/// When a failed run alerts.
#[derive(Debug, Args)]
#[command(next_help_heading = "Check-ins")]
pub struct AlertArgs {
    /// Alert only once N runs of the job in a row have failed
    ///
    /// A failed run is tolerated while fewer than N runs of the job
    /// (--name, else --lock's KEY) have failed in a row: its end check-in
    /// is URL/log, not URL/N, --ping-fail and --on-give-up are not called,
    /// --output on-failure stays silent; the exit status stays the
    /// command's. A success starts the count again. The count is kept in
    /// the budgets' store. See ALERTS.
    #[arg(long, value_name = "N", env = "BACKOFF_ALERT_AFTER", hide_env_values = true,
          value_parser = values::alert_after, allow_hyphen_values = true)]
    pub alert_after: Option<u64>,
}

/// `backoff lock show|reset KEY`.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum LockCommand {
    /// Print whether a lock is held, and by whom (pid, host, since when).
    Show {
        /// The lock's key.
        #[arg(value_name = "KEY", value_parser = values::budget_key)]
        key: String,
        #[command(flatten)]
        store: StoreArgs,
        /// Output format.
        #[arg(long, value_enum, default_value = "text")]
        format: BudgetFormat,
    },
    /// Clear a lock that no run holds (a killed holder's record); one held
    /// by a live run only with --force. Say what it was.
    Reset {
        /// The lock's key.
        #[arg(value_name = "KEY", value_parser = values::budget_key)]
        key: String,
        /// Remove the lock even though a run holds it: the holder ends its
        /// attempt and gives up (lock_lost) when it sees it gone, within a
        /// second for a file and at its next renewal for a lease in Redis;
        /// the next run takes the lock once that holder has ended.
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        store: StoreArgs,
        /// Output format: a line on stderr, or one JSON object on stdout.
        #[arg(long, value_enum, default_value = "text")]
        format: BudgetFormat,
    },
}

/// `backoff once show|reset KEY`.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum OnceCommand {
    /// Print the last success of a job (when, on which host, its run id),
    /// the current period, and whether it is done.
    Show {
        /// The job's key (its lock's).
        #[arg(value_name = "KEY", value_parser = values::budget_key)]
        key: String,
        /// The period to tell of (else the one the last success recorded)
        #[arg(long, value_name = "PERIOD", value_parser = values::once_per)]
        once_per: Option<crate::fleet::once::Period>,
        #[command(flatten)]
        store: StoreArgs,
        /// Output format.
        #[arg(long, value_enum, default_value = "text")]
        format: BudgetFormat,
    },
    /// Remove the record of a job's last success, so that its next run
    /// does the job whatever the period; say what it was.
    Reset {
        /// The job's key (its lock's).
        #[arg(value_name = "KEY", value_parser = values::budget_key)]
        key: String,
        #[command(flatten)]
        store: StoreArgs,
        /// Output format: a line on stderr, or one JSON object on stdout.
        #[arg(long, value_enum, default_value = "text")]
        format: BudgetFormat,
    },
}

// Options of `backoff schedule`.
#[derive(Debug, Args)]
pub struct ScheduleArgs {
    #[command(flatten)]
    pub policy: PolicyArgs,

    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
}

/// Output formats of `schedule`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned columns for people.
    Table,
    /// One JSON document.
    Json,
    /// Comma-separated values with a header line.
    Csv,
}

// The delay policy.
#[derive(Debug, Args)]
#[command(next_help_heading = "Policy")]
pub struct PolicyArgs {
    /// Upper bound of the first retry's delay
    #[arg(long, value_name = "DURATION", env = "BACKOFF_BASE", hide_env_values = true,
          value_parser = values::duration, allow_hyphen_values = true,
        default_value = "100ms")]
    pub base: Duration,

    /// Longest delay
    ///
    /// No single delay exceeds it, whatever the jitter.
    #[arg(long, value_name = "DURATION", env = "BACKOFF_CAP", hide_env_values = true,
          value_parser = values::duration, allow_hyphen_values = true,
        default_value = "30s")]
    pub cap: Duration,

    /// Growth of the bound per retry: finite, at least 1 (1 = constant)
    #[arg(long, value_name = "F", env = "BACKOFF_FACTOR", hide_env_values = true,
          value_parser = values::factor, allow_hyphen_values = true,
        default_value = "2")]
    pub factor: f64,

    /// How a delay is drawn from its bound
    #[arg(
        long,
        value_enum,
        value_name = "KIND",
        env = "BACKOFF_JITTER",
        hide_env_values = true,
        ignore_case = true,
        default_value = "full"
    )]
    pub jitter: Jitter,

    /// Retries after the first attempt
    ///
    /// 0 runs the command once.
    #[arg(long, value_name = "N", env = "BACKOFF_MAX_RETRIES", hide_env_values = true,
          value_parser = values::retries, allow_hyphen_values = true,
        default_value = "6")]
    pub max_retries: u64,

    /// The same limit counted as attempts (3 = 2 retries).
    #[arg(long, value_name = "N", value_parser = values::attempts, allow_hyphen_values = true)]
    pub attempts: Option<u64>,

    /// No retry limit: retry until success or a stop rule.
    #[arg(long)]
    pub forever: bool,

    /// Explicit bounds instead of the formula, comma-separated (1s,5s,30s):
    /// the first retry's bound, the second's, ..., the last repeating;
    /// jitter applies to each. Not with --base, --factor or --cap.
    #[arg(long, value_name = "LIST", value_parser = values::delay_list)]
    pub delays: Option<DelayList>,

    /// Poll at a fixed interval, with no retry limit
    ///
    /// --base D --cap D --factor 1 --forever, with --jitter none unless
    /// --jitter is given; --max-retries or --attempts still limit it.
    #[arg(long, value_name = "DURATION", value_parser = values::duration)]
    pub poll: Option<Duration>,

    /// Seed of the jitter's random generator: same seed, same delays.
    #[arg(long, value_name = "U64", value_parser = values::seed, allow_hyphen_values = true)]
    pub seed: Option<u64>,
}

/// Shell commands run between attempts and at the end.
#[derive(Debug, Args)]
#[command(next_help_heading = "Hooks")]
pub struct HookArgs {
    /// Run CMD with `sh -c` once, before the first attempt; its failure is
    /// told and the run goes on.
    ///
    /// Each hook runs with `sh -c CMD` (on Windows `cmd.exe /d /s /c
    /// "CMD"`), in a process group (a job) of its own.
    #[arg(long, value_name = "CMD", allow_hyphen_values = true,
          value_hint = ValueHint::CommandString)]
    pub on_start: Option<String>,

    /// Run CMD with `sh -c` at the start of each delay before a retry (its
    /// time counts against the delay); it sees BACKOFF_ATTEMPT,
    /// BACKOFF_LAST_STATUS, BACKOFF_NEXT_DELAY.
    #[arg(long, value_name = "CMD", allow_hyphen_values = true,
          value_hint = ValueHint::CommandString)]
    pub on_retry: Option<String>,

    /// Run CMD with `sh -c` when the run ends without success; it sees
    /// BACKOFF_REASON (exhausted, stopped, deadline, budget, interrupted,
    /// failure_found) and BACKOFF_LAST_STATUS.
    #[arg(long, value_name = "CMD", allow_hyphen_values = true,
          value_hint = ValueHint::CommandString)]
    pub on_give_up: Option<String>,

    /// Run CMD with `sh -c` when the run succeeds.
    #[arg(long, value_name = "CMD", allow_hyphen_values = true,
          value_hint = ValueHint::CommandString)]
    pub on_success: Option<String>,

    /// The longest a hook may run; then it is ended like a timed-out attempt.
    #[arg(long, value_name = "DURATION", value_parser = values::duration,
          allow_hyphen_values = true, default_value = "30s")]
    pub hook_timeout: Duration,
}

/// What ends a run: success, a condition on the output, a streak, or the
/// first failure.
#[derive(Debug, Args)]
#[command(next_help_heading = "Success conditions")]
pub struct GoalArgs {
    /// Succeed only on output with a line matching REGEX
    ///
    /// An attempt succeeds only if its exit counts as success and it printed
    /// a line (stdout or stderr) matching REGEX; otherwise its outcome is
    /// "unmet", retried unless a rule says otherwise. Repeatable: any of them.
    #[arg(long, value_name = "REGEX", value_parser = values::output_regex, allow_hyphen_values = true)]
    pub until_output: Vec<Regex>,

    /// Success needs N successful attempts in a row; a failure resets the
    /// count and is retried as usual.
    #[arg(long, value_name = "N", value_parser = values::run_count)]
    pub consecutive: Option<u64>,

    /// Run the command again while it succeeds, at most N runs (default: no
    /// limit); stop at the first failure and exit with its status, or 0 when
    /// every run succeeded.
    #[arg(long, value_name = "N", num_args = 0..=1, value_parser = values::run_count)]
    pub until_failure: Option<Option<u64>>,

    /// An attempt that ran at least this long before failing starts the
    /// retry count and the delays over, as if it were the first.
    #[arg(long, value_name = "DURATION", value_parser = values::duration)]
    pub reset_after: Option<Duration>,
}

/// Which outcomes succeed, are retried, or stop the run.
#[derive(Debug, Args)]
#[command(next_help_heading = "Classification")]
pub struct RuleArgs {
    /// Retry only these outcomes (codes, sig:TERM, timeout)
    ///
    /// Exit codes (3, or 0x3 in hexadecimal), ranges (1-5), signals
    /// (sig:TERM), timeout, unmet; comma-separated, repeatable. Default: every failure except death by
    /// SIGINT or SIGPIPE.
    #[arg(long, value_name = "RULES", value_parser = values::rules, allow_hyphen_values = true)]
    pub retry_on: Vec<RuleList>,

    /// Never retry these outcomes; checked first
    ///
    /// Checked before --success-on and --retry-on, so an outcome in both
    /// --stop-on and --retry-on stops the run (--stop-on 2 --retry-on 1-255
    /// retries every failure but exit 2). A rule that could never match,
    /// every outcome it names taken by a list checked before it, is
    /// refused.
    #[arg(long, value_name = "RULES", value_parser = values::rules, allow_hyphen_values = true)]
    pub stop_on: Vec<RuleList>,

    /// Count these outcomes as success.
    #[arg(long, value_name = "RULES", value_parser = values::rules, allow_hyphen_values = true,
          default_value = "0")]
    pub success_on: Vec<RuleList>,
}

/// Time limits of one attempt and of the whole run.
#[derive(Debug, Args)]
#[command(next_help_heading = "Time limits")]
pub struct TimeArgs {
    /// Time limit of each attempt
    ///
    /// On expiry the command's process group gets --signal, then KILL after
    /// --kill-after; the outcome is "timeout".
    #[arg(long, value_name = "DURATION", env = "BACKOFF_TIMEOUT", hide_env_values = true,
          value_parser = values::duration, allow_hyphen_values = true)]
    pub timeout: Option<Duration>,

    /// Signal sent when an attempt times out (name or number)
    ///
    /// On Windows: CTRL_BREAK, to the attempt's console process group.
    #[arg(long, value_name = "SIG", value_parser = values::signal, allow_hyphen_values = true, default_value = crate::signal::DEFAULT_TIMEOUT_SIGNAL)]
    pub signal: i32,

    /// How long a timed-out attempt may take to end before it is killed
    #[arg(long, value_name = "DURATION", value_parser = values::duration,
          allow_hyphen_values = true,
        default_value = "5s")]
    pub kill_after: Duration,

    /// An attempt that writes nothing to stdout or stderr for this long
    /// times out (outcome "timeout", limit idle), with --signal and
    /// --kill-after as for --timeout.
    #[arg(long, value_name = "DURATION", value_parser = values::duration,
          allow_hyphen_values = true)]
    pub idle_timeout: Option<Duration>,

    /// Time limit of the whole run
    ///
    /// backoff exits by it plus --kill-after. A deadline from the run's
    /// start: no attempt starts after it, a delay
    /// that would pass it is not slept, and the running attempt is bounded
    /// by the time left. backoff exits at the latest --kill-after after the
    /// deadline: the attempt gets --signal at the deadline and SIGKILL
    /// --kill-after later (halfway, with a closing hook), and --on-give-up
    /// and --on-success run within that time.
    #[arg(long, value_name = "DURATION", env = "BACKOFF_MAX_TIME", hide_env_values = true,
          value_parser = values::duration, allow_hyphen_values = true)]
    pub max_time: Option<Duration>,

    /// Wait in [0, DURATION) first, fixed per host
    ///
    /// This host's place comes from its machine id and host name (which
    /// keeps clones of one image apart) and the job (--name, else the
    /// program's name); --seed N takes the machine's place. A fleet's cron
    /// jobs that fire at once spread over the window. At most 24h, and
    /// shorter than --max-time, which it counts against; a signal cuts it.
    #[arg(long, value_name = "DURATION", env = "BACKOFF_SPLAY", hide_env_values = true,
          value_parser = values::duration)]
    pub splay: Option<Duration>,

    /// When the last attempt timed out, exit with the command's own status
    /// instead of 124.
    #[arg(long)]
    pub preserve_status: bool,
}

/// Output rules, servers' hints, held output and replayed input.
#[derive(Debug, Args)]
#[command(next_help_heading = "Output and servers")]
// Each flag is an option of its own, not a state in disguise.
#[allow(clippy::struct_excessive_bools)]
pub struct StreamArgs {
    /// Retry an attempt that printed a line (stdout or stderr) matching
    /// REGEX; repeatable. The output still reaches you live, unchanged.
    #[arg(long, value_name = "REGEX", value_parser = values::output_regex, allow_hyphen_values = true)]
    pub retry_if_output: Vec<Regex>,

    /// Never retry an attempt that printed a line matching REGEX; beats
    /// every retry rule; repeatable.
    #[arg(long, value_name = "REGEX", value_parser = values::output_regex, allow_hyphen_values = true)]
    pub stop_if_output: Vec<Regex>,

    /// Honour a server's Retry-After header line in the output (seconds or
    /// an HTTP-date): the next delay is at least that long, even above --cap.
    #[arg(long)]
    pub retry_after: bool,

    /// Find the Retry-After value elsewhere: the first capture group of
    /// REGEX holds it (implies --retry-after).
    #[arg(long, value_name = "REGEX", value_parser = values::capturing_regex,
          allow_hyphen_values = true)]
    pub retry_after_pattern: Option<Regex>,

    /// The longest a server's hint is obeyed: a hint above it ends the run
    /// at once, with the command's status.
    #[arg(long, value_name = "DURATION", value_parser = values::duration,
          default_value = "5m", env = "BACKOFF_RETRY_AFTER_MAX", hide_env_values = true)]
    pub retry_after_max: Duration,

    /// Jitter on a server's hint: the wait is hint × U[1, 1+J), never
    /// shorter than the hint nor longer than --retry-after-max (0: the hint
    /// exactly).
    #[arg(long, value_name = "J", value_parser = values::hint_jitter, default_value = "0.2")]
    pub retry_after_jitter: f64,

    /// With --preset curl: the request may be repeated even when it is a
    /// POST or PATCH without an Idempotency-Key header, after a failure
    /// that leaves it unknown whether the server acted on it.
    #[arg(long)]
    pub idempotent: bool,

    /// The retry rules of curl, wget or git
    ///
    /// A command whose program is curl, wget or git gets its preset
    /// without this option; --preset none turns that off, and another
    /// NAME chooses another. See the man page's PRESETS for every rule.
    #[arg(long, value_enum, value_name = "NAME")]
    pub preset: Option<PresetName>,

    /// Hold back each attempt's stdout; write only the stdout of the attempt
    /// that ends the run. --preset curl does this by default when curl
    /// writes the body to stdout.
    #[arg(long, conflicts_with = "stream_stdout")]
    pub hold_stdout: bool,

    /// Pass each attempt's stdout on as it comes, even with --preset curl.
    #[arg(long)]
    pub stream_stdout: bool,

    /// Read stdin once, to its end, before the first attempt, and give every
    /// attempt the same bytes.
    #[arg(long)]
    pub replay_stdin: bool,

    /// on-failure: the output only if the run fails, for cron
    ///
    /// on-failure keeps the run's output (stdout, stderr, backoff's lines)
    /// and writes it out only if the run does not succeed. live (the default) passes the output on as it comes. on-failure keeps
    /// it, in order, in a temporary file, and writes each part to its stream
    /// when the run ends with a status other than 0: a success prints
    /// nothing. See CRON JOBS.
    #[arg(
        long,
        value_enum,
        value_name = "MODE",
        default_value = "live",
        env = "BACKOFF_OUTPUT",
        hide_env_values = true
    )]
    pub output: crate::output::Mode,

    /// With --output on-failure: the most output kept, its first and last
    /// halves (B, KB, KiB, MB, MiB, GB, GiB)
    #[arg(long, value_name = "SIZE", value_parser = values::size, default_value = "1MiB",
          env = "BACKOFF_OUTPUT_LIMIT", hide_env_values = true, allow_hyphen_values = true)]
    pub output_limit: u64,
}

/// What backoff says.
#[derive(Debug, Args)]
#[command(next_help_heading = "Reporting")]
pub struct OutputArgs {
    /// Say nothing but backoff's own errors.
    #[arg(short, long, conflicts_with = "verbose")]
    pub quiet: bool,

    /// Also say the command line, delay bounds and success.
    #[arg(short, long)]
    pub verbose: bool,

    /// Name the command in reports (default: the program's name).
    #[arg(long, value_name = "LABEL", value_parser = values::label)]
    pub name: Option<String>,

    /// Start every text line backoff writes with the local time, for logs
    /// such as cron's.
    ///
    /// RFC 3339 with milliseconds and the zone's offset (from TZ, else
    /// /etc/localtime), before the --name label: "backoff:
    /// 2026-12-01T17:03:22.783+01:00 NAME: ...". JSON events keep their own
    /// "time". In BACKOFF_TIMESTAMPS, 0, false, no, off or an empty value
    /// mean off, any other value on.
    #[arg(long, env = "BACKOFF_TIMESTAMPS", hide_env_values = true,
          value_parser = clap::builder::FalseyValueParser::new())]
    pub timestamps: bool,

    /// How backoff reports on stderr: text lines, one JSON object per event,
    /// GitHub Actions annotations and folds, or GitLab CI sections [default:
    /// github when GITHUB_ACTIONS is true, gitlab when GITLAB_CI is true,
    /// else text]
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub log_format: Option<LogFormat>,

    /// At exit, write a JSON summary of the run to FILE
    ///
    /// Written atomically; a regular file, /dev/stdout or /dev/stderr.
    #[arg(long, value_name = "FILE", value_parser = values::summary_file)]
    pub report: Option<PathBuf>,

    /// At exit, write Prometheus metrics of the run to FILE
    ///
    /// For the node exporter's textfile collector, written atomically; a
    /// regular file, /dev/stdout or /dev/stderr.
    #[arg(long, value_name = "FILE", value_parser = values::summary_file)]
    pub metrics_file: Option<PathBuf>,

    /// At exit, push the run's metrics to a Prometheus Pushgateway at URL
    ///
    /// The gauges of --metrics-file, to the group
    /// URL/metrics/job/NAME/instance/HOST (NAME from --name, else the
    /// program's; HOST this host's name): a PUT after a success, which
    /// replaces the group, a POST after any other end, which keeps the
    /// group's backoff_last_success_timestamp_seconds. Within
    /// --metrics-push-timeout; a push that fails is one warning and never
    /// changes the exit status. See REPORTS AND METRICS.
    #[arg(
        long,
        value_name = "URL",
        env = "BACKOFF_METRICS_PUSH",
        hide_env_values = true
    )]
    pub metrics_push: Option<String>,

    /// The longest the metrics push delays the end of the run, retries
    /// included
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = values::duration,
          allow_hyphen_values = true)]
    pub metrics_push_timeout: Duration,
}

/// A value as an error message quotes it: whole, or, past 100 characters,
/// its first 60 and how long it is, so that the message stays one line a
/// person can read.
pub fn quotable(value: &str) -> std::borrow::Cow<'_, str> {
    if value.chars().nth(100).is_none() {
        return value.into();
    }
    let cut = value
        .char_indices()
        .nth(60)
        .map_or(value.len(), |(at, _)| at);
    format!("{}… ({} bytes)", &value[..cut], value.len()).into()
}

/// Where a value came from, for an error message: `'--flag'`, or, when
/// `from_environment` says so of the flag's argument (told its id), the
/// environment variable that gave it:
/// `BACKOFF_MAX_RETRIES (from the environment, for '--max-retries')`.
pub fn flag_source(flag: &str, from_environment: impl Fn(&str) -> bool) -> String {
    let Some(long) = flag.strip_prefix("--") else {
        return format!("'{flag}'");
    };
    let mut command = <Cli as clap::CommandFactory>::command();
    command.build();
    let env = std::iter::once(&command)
        .chain(command.get_subcommands())
        .flat_map(clap::Command::get_arguments)
        .find(|a| a.get_long() == Some(long))
        .filter(|a| from_environment(a.get_id().as_str()))
        .and_then(|a| a.get_env().map(ToOwned::to_owned));
    match env {
        Some(name) => format!(
            "{} (from the environment, for '{flag}')",
            name.to_string_lossy()
        ),
        None => format!("'{flag}'"),
    }
}

/// Whether clap's error `e`, a bad value, was about a value that the
/// environment gave rather than `args` (backoff's command line). clap reads
/// an environment variable only for a flag the command line did not give,
/// and only once the whole command line is parsed: parsed again with no
/// variable at all, a command line that holds the bad value fails the same
/// way, and one that does not, does not. So clap alone says where its
/// options end (the first word of the command, or `--`).
pub fn value_from_environment(e: &clap::Error, args: &[OsString]) -> bool {
    use clap::error::ContextKind;
    fn without_env(command: clap::Command) -> clap::Command {
        command
            .mut_args(|a| a.env(None))
            .mut_subcommands(without_env)
    }
    let same = |other: &clap::Error| {
        other.kind() == e.kind()
            && [ContextKind::InvalidArg, ContextKind::InvalidValue]
                .into_iter()
                .all(|k| other.get(k) == e.get(k))
    };
    values::parsing_afresh();
    // Every subcommand's options built, so that none reads its variable.
    let mut command = <Cli as clap::CommandFactory>::command();
    command.build();
    match without_env(command).try_get_matches_from(args) {
        Ok(_) => true,
        Err(other) => !same(&other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn a_long_value_is_quoted_by_its_start_and_its_length() {
        assert_eq!(quotable("100ms"), "100ms");
        let hundred = "é".repeat(100);
        assert_eq!(quotable(&hundred), hundred);
        let long = format!("{hundred}x");
        assert_eq!(quotable(&long), format!("{}… (201 bytes)", "é".repeat(60)));
    }

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
        for name in ["schedule", "simulate", "budget", "breaker", "throttle"] {
            assert!(Cli::command().find_subcommand(name).is_some(), "{name}");
        }
    }

    #[test]
    fn generate_has_a_man_page_for_backoff_and_each_subcommand() {
        let pages: Vec<String> = Generate::value_variants()
            .iter()
            .filter_map(|g| {
                let name = g.to_possible_value()?.get_name().to_owned();
                name.starts_with("man").then_some(name)
            })
            .collect();
        let mut expected = vec!["man".to_owned()];
        expected.extend(
            Cli::command()
                .get_subcommands()
                .map(|s| format!("man-{}", s.get_name())),
        );
        assert_eq!(pages, expected);
    }

    #[test]
    fn a_run_builds_no_subcommands_options_and_a_subcommand_only_its_own() {
        let built = |cmd: &clap::Command, name: &str| {
            cmd.find_subcommand(name)
                .unwrap()
                .get_arguments()
                .filter(|a| !a.is_positional() && a.get_id() != "help")
                .count()
        };
        let mut cmd = Cli::command();
        cmd.try_get_matches_from_mut(["backoff", "--max-retries", "2", "--", "true"])
            .unwrap();
        for sub in cmd.get_subcommands() {
            assert_eq!(built(&cmd, sub.get_name()), 0, "{}", sub.get_name());
        }
        let mut cmd = Cli::command();
        cmd.try_get_matches_from_mut(["backoff", "simulate", "--seed", "1"])
            .unwrap();
        assert!(built(&cmd, "simulate") > 10);
        assert_eq!(built(&cmd, "schedule"), 0);
        // Built on demand, every subcommand has its options.
        cmd.build();
        assert!(built(&cmd, "schedule") > 0);
        let budget = cmd.find_subcommand("budget").unwrap();
        assert!(
            budget
                .get_subcommands()
                .all(|s| built(budget, s.get_name()) > 0)
        );
    }

    #[test]
    fn the_short_help_names_options_that_exist_and_hides_the_others() {
        let mut cmd = Cli::command();
        cmd.build();
        for id in SHORT_HELP {
            let arg = cmd.get_arguments().find(|a| a.get_id() == id);
            assert!(arg.is_some_and(|a| !a.is_hide_short_help_set()), "{id}");
        }
        let hidden = cmd.get_arguments().filter(|a| a.is_hide_short_help_set());
        assert!(hidden.count() > 40);
        // The subcommands show all their options in -h.
        for sub in cmd.get_subcommands() {
            assert!(sub.get_arguments().all(|a| !a.is_hide_short_help_set()));
        }
    }

    #[test]
    fn the_defaults_are_those_of_the_specification() {
        let cli = Cli::try_parse_from(["backoff", "--", "x"]).unwrap();
        let p = &cli.policy;
        assert_eq!(p.base, Duration::from_millis(100));
        assert_eq!(p.cap, Duration::from_secs(30));
        assert_eq!(p.factor.to_bits(), 2.0_f64.to_bits());
        assert_eq!(p.jitter, Jitter::Full);
        assert_eq!(p.max_retries, 6);
        assert_eq!(
            Ok(cli.time.signal),
            values::signal(crate::signal::DEFAULT_TIMEOUT_SIGNAL)
        );
        assert_eq!(cli.time.kill_after, Duration::from_secs(5));
        assert_eq!(
            cli.budget.store.budget_ratio,
            crate::fleet::bucket::UNIT / 10
        );
        let store = &cli.budget.store;
        assert_eq!(store.budget_burst, 10 * crate::fleet::bucket::UNIT);
        assert_eq!(store.place.budget_store_timeout, Duration::from_millis(250));
        assert_eq!(store.place.budget_store_fail, FailMode::Open);
        let throttle = &cli.throttle.limits;
        assert_eq!(throttle.throttle_window, Duration::from_mins(2));
        assert_eq!(throttle.throttle_k, 2000);
        assert_eq!(
            cli.rules.success_on,
            [RuleList(vec![crate::classify::Rule::Codes(0, 0)])]
        );
    }

    #[test]
    fn long_flags_are_set_when_given_once_and_take_no_value() {
        let flags = [
            "--forever",
            "--preserve-status",
            "--retry-after",
            "--hold-stdout",
            "--replay-stdin",
            "--foreground",
            "--timestamps",
        ];
        let set = |c: &Cli| {
            [
                c.policy.forever,
                c.time.preserve_status,
                c.streams.retry_after,
                c.streams.hold_stdout,
                c.streams.replay_stdin,
                c.foreground,
                c.output.timestamps,
            ]
        };
        let none = Cli::try_parse_from(["backoff", "--", "x"]).unwrap();
        assert_eq!(set(&none), [false; 7]);
        let argv = [&["backoff"][..], &flags, &["--", "x"]].concat();
        let all = Cli::try_parse_from(argv).unwrap();
        assert_eq!(set(&all), [true; 7]);
        assert_eq!(all.command, ["x"]);
        for flag in flags {
            for argv in [
                vec!["backoff", flag, flag, "--", "x"],
                vec!["backoff", &format!("{flag}=true"), "--", "x"],
            ] {
                assert!(Cli::try_parse_from(&argv).is_err(), "{argv:?}");
            }
        }
    }

    #[test]
    fn subcommands_parse_into_their_variants() {
        let cli = Cli::try_parse_from(["backoff", "schedule", "--jitter", "none"]).unwrap();
        assert!(matches!(cli.subcommand, Some(Sub::Schedule(_))));
        let cli = Cli::try_parse_from(["backoff", "simulate", "--runs", "3"]).unwrap();
        assert!(matches!(cli.subcommand, Some(Sub::Simulate(ref a)) if a.runs == Some(3)));
        let cli = Cli::try_parse_from(["backoff", "budget", "show", "k"]).unwrap();
        assert!(matches!(
            cli.subcommand,
            Some(Sub::Budget(BudgetCommand::Show { ref key, .. })) if key == "k"
        ));
        let cli = Cli::try_parse_from(["backoff", "--delays", "1s,2s", "--", "x"]).unwrap();
        assert_eq!(
            cli.policy.delays,
            Some(DelayList(vec![
                Duration::from_secs(1),
                Duration::from_secs(2)
            ]))
        );
        let cli = Cli::try_parse_from(["backoff", "--until-failure", "--", "x"]).unwrap();
        assert_eq!(cli.goal.until_failure, Some(None));
        let cli = Cli::try_parse_from(["backoff", "--until-failure", "3", "x"]).unwrap();
        assert_eq!(cli.goal.until_failure, Some(Some(3)));
        let cli = Cli::try_parse_from(["backoff", "--", "schedule"]).unwrap();
        assert!(cli.subcommand.is_none());
        assert_eq!(cli.command, ["schedule"]);
    }
}
