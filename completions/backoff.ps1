
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'backoff' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'backoff'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'backoff' {
            [CompletionResult]::new('--base', '--base', [CompletionResultType]::ParameterName, 'Upper bound of the first retry''s delay')
            [CompletionResult]::new('--cap', '--cap', [CompletionResultType]::ParameterName, 'Longest delay')
            [CompletionResult]::new('--factor', '--factor', [CompletionResultType]::ParameterName, 'Growth of the bound per retry: finite, at least 1 (1 = constant)')
            [CompletionResult]::new('--jitter', '--jitter', [CompletionResultType]::ParameterName, 'How a delay is drawn from its bound')
            [CompletionResult]::new('--max-retries', '--max-retries', [CompletionResultType]::ParameterName, 'Retries after the first attempt')
            [CompletionResult]::new('--attempts', '--attempts', [CompletionResultType]::ParameterName, 'The same limit counted as attempts (3 = 2 retries)')
            [CompletionResult]::new('--delays', '--delays', [CompletionResultType]::ParameterName, 'Explicit bounds instead of the formula, comma-separated (1s,5s,30s): the first retry''s bound, the second''s, ..., the last repeating; jitter applies to each. Not with --base, --factor or --cap')
            [CompletionResult]::new('--poll', '--poll', [CompletionResultType]::ParameterName, 'Poll at a fixed interval, with no retry limit')
            [CompletionResult]::new('--seed', '--seed', [CompletionResultType]::ParameterName, 'Seed of the jitter''s random generator: same seed, same delays')
            [CompletionResult]::new('--retry-on', '--retry-on', [CompletionResultType]::ParameterName, 'Retry only these outcomes (codes, sig:TERM, timeout)')
            [CompletionResult]::new('--stop-on', '--stop-on', [CompletionResultType]::ParameterName, 'Never retry these outcomes; checked first')
            [CompletionResult]::new('--success-on', '--success-on', [CompletionResultType]::ParameterName, 'Count these outcomes as success')
            [CompletionResult]::new('--until-output', '--until-output', [CompletionResultType]::ParameterName, 'Succeed only on output with a line matching REGEX')
            [CompletionResult]::new('--consecutive', '--consecutive', [CompletionResultType]::ParameterName, 'Success needs N successful attempts in a row; a failure resets the count and is retried as usual')
            [CompletionResult]::new('--until-failure', '--until-failure', [CompletionResultType]::ParameterName, 'Run the command again while it succeeds, at most N runs (default: no limit); stop at the first failure and exit with its status, or 0 when every run succeeded')
            [CompletionResult]::new('--reset-after', '--reset-after', [CompletionResultType]::ParameterName, 'An attempt that ran at least this long before failing starts the retry count and the delays over, as if it were the first')
            [CompletionResult]::new('--on-start', '--on-start', [CompletionResultType]::ParameterName, 'Run CMD with `sh -c` once, before the first attempt; its failure is told and the run goes on')
            [CompletionResult]::new('--on-retry', '--on-retry', [CompletionResultType]::ParameterName, 'Run CMD with `sh -c` at the start of each delay before a retry (its time counts against the delay); it sees BACKOFF_ATTEMPT, BACKOFF_LAST_STATUS, BACKOFF_NEXT_DELAY')
            [CompletionResult]::new('--on-give-up', '--on-give-up', [CompletionResultType]::ParameterName, 'Run CMD with `sh -c` when the run ends without success; it sees BACKOFF_REASON (exhausted, stopped, deadline, budget, interrupted, failure_found) and BACKOFF_LAST_STATUS')
            [CompletionResult]::new('--on-success', '--on-success', [CompletionResultType]::ParameterName, 'Run CMD with `sh -c` when the run succeeds')
            [CompletionResult]::new('--hook-timeout', '--hook-timeout', [CompletionResultType]::ParameterName, 'The longest a hook may run; then it is ended like a timed-out attempt')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Time limit of each attempt')
            [CompletionResult]::new('--signal', '--signal', [CompletionResultType]::ParameterName, 'Signal sent when an attempt times out (name or number)')
            [CompletionResult]::new('--kill-after', '--kill-after', [CompletionResultType]::ParameterName, 'How long a timed-out attempt may take to end before it is killed')
            [CompletionResult]::new('--idle-timeout', '--idle-timeout', [CompletionResultType]::ParameterName, 'An attempt that writes nothing to stdout or stderr for this long times out (outcome "timeout", limit idle), with --signal and --kill-after as for --timeout')
            [CompletionResult]::new('--max-time', '--max-time', [CompletionResultType]::ParameterName, 'Time limit of the whole run')
            [CompletionResult]::new('--splay', '--splay', [CompletionResultType]::ParameterName, 'Wait in [0, DURATION) first, fixed per host')
            [CompletionResult]::new('--retry-if-output', '--retry-if-output', [CompletionResultType]::ParameterName, 'Retry an attempt that printed a line (stdout or stderr) matching REGEX; repeatable. The output still reaches you live, unchanged')
            [CompletionResult]::new('--stop-if-output', '--stop-if-output', [CompletionResultType]::ParameterName, 'Never retry an attempt that printed a line matching REGEX; beats every retry rule; repeatable')
            [CompletionResult]::new('--retry-after-pattern', '--retry-after-pattern', [CompletionResultType]::ParameterName, 'Find the Retry-After value elsewhere: the first capture group of REGEX holds it (implies --retry-after)')
            [CompletionResult]::new('--retry-after-max', '--retry-after-max', [CompletionResultType]::ParameterName, 'The longest a server''s hint is obeyed: a hint above it ends the run at once, with the command''s status')
            [CompletionResult]::new('--retry-after-jitter', '--retry-after-jitter', [CompletionResultType]::ParameterName, 'Jitter on a server''s hint: the wait is hint × U[1, 1+J), never shorter than the hint nor longer than --retry-after-max (0: the hint exactly)')
            [CompletionResult]::new('--preset', '--preset', [CompletionResultType]::ParameterName, 'The retry rules of curl, wget or git')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'on-failure: the output only if the run fails, for cron')
            [CompletionResult]::new('--output-limit', '--output-limit', [CompletionResultType]::ParameterName, 'With --output on-failure: the most output kept, its first and last halves (B, KB, KiB, MB, MiB, GB, GiB)')
            [CompletionResult]::new('--budget', '--budget', [CompletionResultType]::ParameterName, 'Share a retry budget with the backoff processes of the same KEY')
            [CompletionResult]::new('--budget-ratio', '--budget-ratio', [CompletionResultType]::ParameterName, 'Tokens a success deposits')
            [CompletionResult]::new('--budget-burst', '--budget-burst', [CompletionResultType]::ParameterName, 'Most tokens a budget holds, and starts with')
            [CompletionResult]::new('--budget-dir', '--budget-dir', [CompletionResultType]::ParameterName, 'Directory of the budgets'', breakers'' and throttles'' state files [default: $XDG_STATE_HOME/backoff, else ~/.local/state/backoff]')
            [CompletionResult]::new('--budget-store', '--budget-store', [CompletionResultType]::ParameterName, 'Keep budgets, breakers and throttles in Redis, shared by a fleet of hosts: redis://[user:password@]host[:port][/db], rediss:// for TLS, redis+unix:///path/to/socket[?db=N] for a Unix socket, or redis+cluster://host:port,host:port for a Redis Cluster (better given in the environment, where the password does not show in process lists)')
            [CompletionResult]::new('--budget-store-timeout', '--budget-store-timeout', [CompletionResultType]::ParameterName, 'How long a budget, breaker, throttle or lock decision may wait: for the Redis store, or for the lock of a state file; then --budget-store-fail (--lock-fail for a lock) decides (at most 1m)')
            [CompletionResult]::new('--budget-store-fail', '--budget-store-fail', [CompletionResultType]::ParameterName, 'When the store cannot be reached or trusted, or does not answer in time: retry under the local policy alone, run the command and send the attempt (open), or do not retry, with --breaker do not run the command, and with --throttle skip the attempt (closed). A lock has its own: --lock-fail')
            [CompletionResult]::new('--breaker', '--breaker', [CompletionResultType]::ParameterName, 'Share a circuit breaker with the backoff processes of the same KEY')
            [CompletionResult]::new('--breaker-failures', '--breaker-failures', [CompletionResultType]::ParameterName, 'Runs in a row that gave up that open the circuit')
            [CompletionResult]::new('--breaker-cooldown', '--breaker-cooldown', [CompletionResultType]::ParameterName, 'How long an open circuit stays open before a probe')
            [CompletionResult]::new('--breaker-exit', '--breaker-exit', [CompletionResultType]::ParameterName, 'Exit status of a run that an open circuit does not let run the command (75, EX_TEMPFAIL: try again later)')
            [CompletionResult]::new('--throttle', '--throttle', [CompletionResultType]::ParameterName, 'Share an adaptive throttle with the backoff processes of the same KEY')
            [CompletionResult]::new('--throttle-window', '--throttle-window', [CompletionResultType]::ParameterName, 'The span of time the throttle counts over (from 1s to 30d)')
            [CompletionResult]::new('--throttle-k', '--throttle-k', [CompletionResultType]::ParameterName, 'K: nothing is skipped while the backend accepts more than one attempt in K, and the fleet sends about K times what it accepts (from 1 to 1000, at most three decimals)')
            [CompletionResult]::new('--lock', '--lock', [CompletionResultType]::ParameterName, 'At most one run of the same KEY at a time')
            [CompletionResult]::new('--lock-wait', '--lock-wait', [CompletionResultType]::ParameterName, 'How long a run waits in turn for a held lock before it gives up')
            [CompletionResult]::new('--lock-exit', '--lock-exit', [CompletionResultType]::ParameterName, 'Exit status of a run that finds the lock held (75, EX_TEMPFAIL)')
            [CompletionResult]::new('--once-per', '--once-per', [CompletionResultType]::ParameterName, 'At most one successful run of the job per PERIOD, across every host sharing the store')
            [CompletionResult]::new('--lock-ttl', '--lock-ttl', [CompletionResultType]::ParameterName, 'How long a lease in Redis lasts unless renewed; the run renews it every third of that')
            [CompletionResult]::new('--lock-fail', '--lock-fail', [CompletionResultType]::ParameterName, 'When the lock cannot be had for certain (its store cannot be reached, trusted or used): do not run the command and exit 75 (closed), or run it without the lock (open); either is said on a line that no output mode hides')
            [CompletionResult]::new('--lock-limit', '--lock-limit', [CompletionResultType]::ParameterName, 'At most N runs hold KEY at once, each in a slot of its own (a counting semaphore); 1 is a plain lock')
            [CompletionResult]::new('--ping', '--ping', [CompletionResultType]::ParameterName, 'Tell a monitor (healthchecks.io) the run''s start and end')
            [CompletionResult]::new('--ping-start', '--ping-start', [CompletionResultType]::ParameterName, 'The URL of the start check-in, as given (overrides --ping''s)')
            [CompletionResult]::new('--ping-success', '--ping-success', [CompletionResultType]::ParameterName, 'The URL of the check-in of a success, as given (overrides --ping''s)')
            [CompletionResult]::new('--ping-fail', '--ping-fail', [CompletionResultType]::ParameterName, 'The URL of the check-in of any other end, as given (overrides --ping''s)')
            [CompletionResult]::new('--ping-timeout', '--ping-timeout', [CompletionResultType]::ParameterName, 'The longest the check-ins delay the end of the run, in all, retries included')
            [CompletionResult]::new('--ping-body-limit', '--ping-body-limit', [CompletionResultType]::ParameterName, 'The most bytes of the end check-in''s body: its summary line, then the end of the output, cut at its front')
            [CompletionResult]::new('--alert-after', '--alert-after', [CompletionResultType]::ParameterName, 'Alert only once N runs of the job in a row have failed')
            [CompletionResult]::new('--name', '--name', [CompletionResultType]::ParameterName, 'Name the command in reports (default: the program''s name)')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'How backoff reports on stderr: text lines, one JSON object per event, GitHub Actions annotations and folds, or GitLab CI sections [default: github when GITHUB_ACTIONS is true, gitlab when GITLAB_CI is true, else text]')
            [CompletionResult]::new('--report', '--report', [CompletionResultType]::ParameterName, 'At exit, write a JSON summary of the run to FILE')
            [CompletionResult]::new('--metrics-file', '--metrics-file', [CompletionResultType]::ParameterName, 'At exit, write Prometheus metrics of the run to FILE')
            [CompletionResult]::new('--metrics-push', '--metrics-push', [CompletionResultType]::ParameterName, 'At exit, push the run''s metrics to a Prometheus Pushgateway at URL')
            [CompletionResult]::new('--metrics-push-timeout', '--metrics-push-timeout', [CompletionResultType]::ParameterName, 'The longest the metrics push delays the end of the run, retries included')
            [CompletionResult]::new('--generate', '--generate', [CompletionResultType]::ParameterName, 'Print a man page or a shell''s completion script, and run nothing')
            [CompletionResult]::new('--forever', '--forever', [CompletionResultType]::ParameterName, 'No retry limit: retry until success or a stop rule')
            [CompletionResult]::new('--preserve-status', '--preserve-status', [CompletionResultType]::ParameterName, 'When the last attempt timed out, exit with the command''s own status instead of 124')
            [CompletionResult]::new('--retry-after', '--retry-after', [CompletionResultType]::ParameterName, 'Honour a server''s Retry-After header line in the output (seconds or an HTTP-date): the next delay is at least that long, even above --cap')
            [CompletionResult]::new('--idempotent', '--idempotent', [CompletionResultType]::ParameterName, 'With --preset curl: the request may be repeated even when it is a POST or PATCH without an Idempotency-Key header, after a failure that leaves it unknown whether the server acted on it')
            [CompletionResult]::new('--hold-stdout', '--hold-stdout', [CompletionResultType]::ParameterName, 'Hold back each attempt''s stdout; write only the stdout of the attempt that ends the run. --preset curl does this by default when curl writes the body to stdout')
            [CompletionResult]::new('--stream-stdout', '--stream-stdout', [CompletionResultType]::ParameterName, 'Pass each attempt''s stdout on as it comes, even with --preset curl')
            [CompletionResult]::new('--replay-stdin', '--replay-stdin', [CompletionResultType]::ParameterName, 'Read stdin once, to its end, before the first attempt, and give every attempt the same bytes')
            [CompletionResult]::new('--lock-replace', '--lock-replace', [CompletionResultType]::ParameterName, 'End the run that holds the lock and take it over (Kubernetes'' Replace)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Say nothing but backoff''s own errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Say nothing but backoff''s own errors')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Also say the command line, delay bounds and success')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Also say the command line, delay bounds and success')
            [CompletionResult]::new('--timestamps', '--timestamps', [CompletionResultType]::ParameterName, 'Start every text line backoff writes with the local time, for logs such as cron''s')
            [CompletionResult]::new('--foreground', '--foreground', [CompletionResultType]::ParameterName, 'Keep the command in backoff''s process group, for programs that need the terminal; then signals reach only the command itself, not the processes it started')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('schedule', 'schedule', [CompletionResultType]::ParameterValue, 'Print the delays a policy produces, and run nothing')
            [CompletionResult]::new('simulate', 'simulate', [CompletionResultType]::ParameterValue, 'Show why jitter matters, and what retries and a fleet''s cron do to a server')
            [CompletionResult]::new('budget', 'budget', [CompletionResultType]::ParameterValue, 'Show or reset a retry budget shared by processes (see --budget)')
            [CompletionResult]::new('breaker', 'breaker', [CompletionResultType]::ParameterValue, 'Show or reset a circuit breaker shared by processes (see --breaker)')
            [CompletionResult]::new('throttle', 'throttle', [CompletionResultType]::ParameterValue, 'Show or reset a throttle shared by processes (see --throttle)')
            [CompletionResult]::new('lock', 'lock', [CompletionResultType]::ParameterValue, 'Show or reset a lock held by runs (see --lock)')
            [CompletionResult]::new('once', 'once', [CompletionResultType]::ParameterValue, 'Show or reset a job''s last success (see --once-per)')
            break
        }
        'backoff;schedule' {
            [CompletionResult]::new('--base', '--base', [CompletionResultType]::ParameterName, 'Upper bound of the first retry''s delay')
            [CompletionResult]::new('--cap', '--cap', [CompletionResultType]::ParameterName, 'Longest delay')
            [CompletionResult]::new('--factor', '--factor', [CompletionResultType]::ParameterName, 'Growth of the bound per retry: finite, at least 1 (1 = constant)')
            [CompletionResult]::new('--jitter', '--jitter', [CompletionResultType]::ParameterName, 'How a delay is drawn from its bound')
            [CompletionResult]::new('--max-retries', '--max-retries', [CompletionResultType]::ParameterName, 'Retries after the first attempt')
            [CompletionResult]::new('--attempts', '--attempts', [CompletionResultType]::ParameterName, 'The same limit counted as attempts (3 = 2 retries)')
            [CompletionResult]::new('--delays', '--delays', [CompletionResultType]::ParameterName, 'Explicit bounds instead of the formula, comma-separated (1s,5s,30s): the first retry''s bound, the second''s, ..., the last repeating; jitter applies to each. Not with --base, --factor or --cap')
            [CompletionResult]::new('--poll', '--poll', [CompletionResultType]::ParameterName, 'Poll at a fixed interval, with no retry limit')
            [CompletionResult]::new('--seed', '--seed', [CompletionResultType]::ParameterName, 'Seed of the jitter''s random generator: same seed, same delays')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--forever', '--forever', [CompletionResultType]::ParameterName, 'No retry limit: retry until success or a stop rule')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'backoff;simulate' {
            [CompletionResult]::new('--model', '--model', [CompletionResultType]::ParameterName, 'The model: Brooker''s experiment, a server past its capacity, or a fleet''s cron')
            [CompletionResult]::new('--clients', '--clients', [CompletionResultType]::ParameterName, 'Client counts: a list (10,50,100) or a range with a step (10-190/10); the overload and cron models take one count (cron: the hosts) [default: 10-190/10; overload, cron: 1000]')
            [CompletionResult]::new('--runs', '--runs', [CompletionResultType]::ParameterName, 'Runs per client count and strategy (contention) [default: 100]')
            [CompletionResult]::new('--strategy', '--strategy', [CompletionResultType]::ParameterName, 'Strategies, comma-separated [default: contention: none, exponential, full, equal, decorrelated; overload: all but policy]')
            [CompletionResult]::new('--base', '--base', [CompletionResultType]::ParameterName, 'Base of the delays [default: Brooker''s 5ms; overload: 100ms]')
            [CompletionResult]::new('--cap', '--cap', [CompletionResultType]::ParameterName, 'Cap of the delays [default: Brooker''s 2s; overload: 30s]')
            [CompletionResult]::new('--factor', '--factor', [CompletionResultType]::ParameterName, 'Growth per retry of the "policy" strategy, and of every overload strategy')
            [CompletionResult]::new('--jitter', '--jitter', [CompletionResultType]::ParameterName, 'Jitter of the "policy" strategy (contention) [default: full]')
            [CompletionResult]::new('--seed', '--seed', [CompletionResultType]::ParameterName, 'Seed of the simulation: same seed, same output [default: random]')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format; a contention table is followed by a terminal chart')
            [CompletionResult]::new('--plot', '--plot', [CompletionResultType]::ParameterName, 'Also draw the charts into an SVG file, replaced whole or left as it was (a temporary file renamed over it), and only a regular file')
            [CompletionResult]::new('--scenario', '--scenario', [CompletionResultType]::ParameterName, 'A set of the values below, each of which may be given instead [default: outage]')
            [CompletionResult]::new('--rate', '--rate', [CompletionResultType]::ParameterName, 'Requests a second each client makes, at a fixed interval [default: 1]')
            [CompletionResult]::new('--capacity', '--capacity', [CompletionResultType]::ParameterName, 'Attempts a second the server works through; with --model cron, requests a second the service answers [default: 2000; cron: 100]')
            [CompletionResult]::new('--queue', '--queue', [CompletionResultType]::ParameterName, 'Most attempts waiting in the server''s queue; more are refused at once [default: 1000; metastable: 4000]')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'How long a client waits for an attempt''s answer [default: 1s]')
            [CompletionResult]::new('--brownout', '--brownout', [CompletionResultType]::ParameterName, 'The share of the capacity left during the outage, from 0 (none) to 1 [default: 0]')
            [CompletionResult]::new('--outage-start', '--outage-start', [CompletionResultType]::ParameterName, 'When the capacity drops [default: 10s]')
            [CompletionResult]::new('--outage-length', '--outage-length', [CompletionResultType]::ParameterName, 'How long it stays down [default: 10s]')
            [CompletionResult]::new('--horizon', '--horizon', [CompletionResultType]::ParameterName, 'How long the simulation runs [default: 60s]')
            [CompletionResult]::new('--max-retries', '--max-retries', [CompletionResultType]::ParameterName, 'Retries after a request''s first attempt [default: 3]')
            [CompletionResult]::new('--budget-ratio', '--budget-ratio', [CompletionResultType]::ParameterName, 'Tokens a success deposits in the budget of "full+budget", one for all clients [default: 0.1]')
            [CompletionResult]::new('--budget-burst', '--budget-burst', [CompletionResultType]::ParameterName, 'Most tokens that budget holds, and starts with [default: 10]')
            [CompletionResult]::new('--breaker-failures', '--breaker-failures', [CompletionResultType]::ParameterName, 'Requests in a row that gave up that open the breaker of "full+breaker", one for all clients [default: 5]')
            [CompletionResult]::new('--breaker-cooldown', '--breaker-cooldown', [CompletionResultType]::ParameterName, 'How long that breaker stays open before a probe [default: 5s]')
            [CompletionResult]::new('--throttle-window', '--throttle-window', [CompletionResultType]::ParameterName, 'The window over which the adaptive throttle of "full+throttle" and "full+budget+throttle", one for all clients, counts requests and accepts, from 1s to 30 days [default: 2m]')
            [CompletionResult]::new('--throttle-k', '--throttle-k', [CompletionResultType]::ParameterName, 'That throttle''s K, from 1 to 1000: it skips attempts when the requests pass K times the accepts [default: 2]')
            [CompletionResult]::new('--splay', '--splay', [CompletionResultType]::ParameterName, 'The --splay window: each host waits its own place in it, as the real --splay places the host; at most 1h, the cron''s period [default: 2m]')
            [CompletionResult]::new('--job', '--job', [CompletionResultType]::ParameterName, 'How long a run of the job lasts once the service has answered its request [default: 5s]')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'backoff;budget' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Print the tokens left in a budget, and the burst and ratio its state records (else those of the options, said to be theirs)')
            [CompletionResult]::new('reset', 'reset', [CompletionResultType]::ParameterValue, 'Fill a budget to its burst again: the one its state records, or with --budget-burst or --budget-ratio those given; say what it held')
            break
        }
        'backoff;budget;show' {
            [CompletionResult]::new('--budget-ratio', '--budget-ratio', [CompletionResultType]::ParameterName, 'Tokens a success deposits')
            [CompletionResult]::new('--budget-burst', '--budget-burst', [CompletionResultType]::ParameterName, 'Most tokens a budget holds, and starts with')
            [CompletionResult]::new('--budget-dir', '--budget-dir', [CompletionResultType]::ParameterName, 'Directory of the budgets'', breakers'' and throttles'' state files [default: $XDG_STATE_HOME/backoff, else ~/.local/state/backoff]')
            [CompletionResult]::new('--budget-store', '--budget-store', [CompletionResultType]::ParameterName, 'Keep budgets, breakers and throttles in Redis, shared by a fleet of hosts: redis://[user:password@]host[:port][/db], rediss:// for TLS, redis+unix:///path/to/socket[?db=N] for a Unix socket, or redis+cluster://host:port,host:port for a Redis Cluster (better given in the environment, where the password does not show in process lists)')
            [CompletionResult]::new('--budget-store-timeout', '--budget-store-timeout', [CompletionResultType]::ParameterName, 'How long a budget, breaker, throttle or lock decision may wait: for the Redis store, or for the lock of a state file; then --budget-store-fail (--lock-fail for a lock) decides (at most 1m)')
            [CompletionResult]::new('--budget-store-fail', '--budget-store-fail', [CompletionResultType]::ParameterName, 'When the store cannot be reached or trusted, or does not answer in time: retry under the local policy alone, run the command and send the attempt (open), or do not retry, with --breaker do not run the command, and with --throttle skip the attempt (closed). A lock has its own: --lock-fail')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'backoff;budget;reset' {
            [CompletionResult]::new('--budget-ratio', '--budget-ratio', [CompletionResultType]::ParameterName, 'Tokens a success deposits')
            [CompletionResult]::new('--budget-burst', '--budget-burst', [CompletionResultType]::ParameterName, 'Most tokens a budget holds, and starts with')
            [CompletionResult]::new('--budget-dir', '--budget-dir', [CompletionResultType]::ParameterName, 'Directory of the budgets'', breakers'' and throttles'' state files [default: $XDG_STATE_HOME/backoff, else ~/.local/state/backoff]')
            [CompletionResult]::new('--budget-store', '--budget-store', [CompletionResultType]::ParameterName, 'Keep budgets, breakers and throttles in Redis, shared by a fleet of hosts: redis://[user:password@]host[:port][/db], rediss:// for TLS, redis+unix:///path/to/socket[?db=N] for a Unix socket, or redis+cluster://host:port,host:port for a Redis Cluster (better given in the environment, where the password does not show in process lists)')
            [CompletionResult]::new('--budget-store-timeout', '--budget-store-timeout', [CompletionResultType]::ParameterName, 'How long a budget, breaker, throttle or lock decision may wait: for the Redis store, or for the lock of a state file; then --budget-store-fail (--lock-fail for a lock) decides (at most 1m)')
            [CompletionResult]::new('--budget-store-fail', '--budget-store-fail', [CompletionResultType]::ParameterName, 'When the store cannot be reached or trusted, or does not answer in time: retry under the local policy alone, run the command and send the attempt (open), or do not retry, with --breaker do not run the command, and with --throttle skip the attempt (closed). A lock has its own: --lock-fail')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: a line on stderr, or one JSON object on stdout')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'backoff;breaker' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Print a circuit''s state: closed, open (since and until when) or half-open')
            [CompletionResult]::new('reset', 'reset', [CompletionResultType]::ParameterValue, 'Close a circuit, and start its count of failed runs again; say what it was')
            break
        }
        'backoff;breaker;show' {
            [CompletionResult]::new('--budget-dir', '--budget-dir', [CompletionResultType]::ParameterName, 'Directory of the budgets'', breakers'' and throttles'' state files [default: $XDG_STATE_HOME/backoff, else ~/.local/state/backoff]')
            [CompletionResult]::new('--budget-store', '--budget-store', [CompletionResultType]::ParameterName, 'Keep budgets, breakers and throttles in Redis, shared by a fleet of hosts: redis://[user:password@]host[:port][/db], rediss:// for TLS, redis+unix:///path/to/socket[?db=N] for a Unix socket, or redis+cluster://host:port,host:port for a Redis Cluster (better given in the environment, where the password does not show in process lists)')
            [CompletionResult]::new('--budget-store-timeout', '--budget-store-timeout', [CompletionResultType]::ParameterName, 'How long a budget, breaker, throttle or lock decision may wait: for the Redis store, or for the lock of a state file; then --budget-store-fail (--lock-fail for a lock) decides (at most 1m)')
            [CompletionResult]::new('--budget-store-fail', '--budget-store-fail', [CompletionResultType]::ParameterName, 'When the store cannot be reached or trusted, or does not answer in time: retry under the local policy alone, run the command and send the attempt (open), or do not retry, with --breaker do not run the command, and with --throttle skip the attempt (closed). A lock has its own: --lock-fail')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'backoff;breaker;reset' {
            [CompletionResult]::new('--budget-dir', '--budget-dir', [CompletionResultType]::ParameterName, 'Directory of the budgets'', breakers'' and throttles'' state files [default: $XDG_STATE_HOME/backoff, else ~/.local/state/backoff]')
            [CompletionResult]::new('--budget-store', '--budget-store', [CompletionResultType]::ParameterName, 'Keep budgets, breakers and throttles in Redis, shared by a fleet of hosts: redis://[user:password@]host[:port][/db], rediss:// for TLS, redis+unix:///path/to/socket[?db=N] for a Unix socket, or redis+cluster://host:port,host:port for a Redis Cluster (better given in the environment, where the password does not show in process lists)')
            [CompletionResult]::new('--budget-store-timeout', '--budget-store-timeout', [CompletionResultType]::ParameterName, 'How long a budget, breaker, throttle or lock decision may wait: for the Redis store, or for the lock of a state file; then --budget-store-fail (--lock-fail for a lock) decides (at most 1m)')
            [CompletionResult]::new('--budget-store-fail', '--budget-store-fail', [CompletionResultType]::ParameterName, 'When the store cannot be reached or trusted, or does not answer in time: retry under the local policy alone, run the command and send the attempt (open), or do not retry, with --breaker do not run the command, and with --throttle skip the attempt (closed). A lock has its own: --lock-fail')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: a line on stderr, or one JSON object on stdout')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'backoff;throttle' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Print a throttle''s counts over its window (requests, of which skipped, and accepts), and the probability that the next attempt is skipped under --throttle-k')
            [CompletionResult]::new('reset', 'reset', [CompletionResultType]::ParameterValue, 'Empty a throttle''s window: nothing counted, nothing skipped; say what it held')
            break
        }
        'backoff;throttle;show' {
            [CompletionResult]::new('--budget-dir', '--budget-dir', [CompletionResultType]::ParameterName, 'Directory of the budgets'', breakers'' and throttles'' state files [default: $XDG_STATE_HOME/backoff, else ~/.local/state/backoff]')
            [CompletionResult]::new('--budget-store', '--budget-store', [CompletionResultType]::ParameterName, 'Keep budgets, breakers and throttles in Redis, shared by a fleet of hosts: redis://[user:password@]host[:port][/db], rediss:// for TLS, redis+unix:///path/to/socket[?db=N] for a Unix socket, or redis+cluster://host:port,host:port for a Redis Cluster (better given in the environment, where the password does not show in process lists)')
            [CompletionResult]::new('--budget-store-timeout', '--budget-store-timeout', [CompletionResultType]::ParameterName, 'How long a budget, breaker, throttle or lock decision may wait: for the Redis store, or for the lock of a state file; then --budget-store-fail (--lock-fail for a lock) decides (at most 1m)')
            [CompletionResult]::new('--budget-store-fail', '--budget-store-fail', [CompletionResultType]::ParameterName, 'When the store cannot be reached or trusted, or does not answer in time: retry under the local policy alone, run the command and send the attempt (open), or do not retry, with --breaker do not run the command, and with --throttle skip the attempt (closed). A lock has its own: --lock-fail')
            [CompletionResult]::new('--throttle-window', '--throttle-window', [CompletionResultType]::ParameterName, 'The span of time the throttle counts over (from 1s to 30d)')
            [CompletionResult]::new('--throttle-k', '--throttle-k', [CompletionResultType]::ParameterName, 'K: nothing is skipped while the backend accepts more than one attempt in K, and the fleet sends about K times what it accepts (from 1 to 1000, at most three decimals)')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'backoff;throttle;reset' {
            [CompletionResult]::new('--budget-dir', '--budget-dir', [CompletionResultType]::ParameterName, 'Directory of the budgets'', breakers'' and throttles'' state files [default: $XDG_STATE_HOME/backoff, else ~/.local/state/backoff]')
            [CompletionResult]::new('--budget-store', '--budget-store', [CompletionResultType]::ParameterName, 'Keep budgets, breakers and throttles in Redis, shared by a fleet of hosts: redis://[user:password@]host[:port][/db], rediss:// for TLS, redis+unix:///path/to/socket[?db=N] for a Unix socket, or redis+cluster://host:port,host:port for a Redis Cluster (better given in the environment, where the password does not show in process lists)')
            [CompletionResult]::new('--budget-store-timeout', '--budget-store-timeout', [CompletionResultType]::ParameterName, 'How long a budget, breaker, throttle or lock decision may wait: for the Redis store, or for the lock of a state file; then --budget-store-fail (--lock-fail for a lock) decides (at most 1m)')
            [CompletionResult]::new('--budget-store-fail', '--budget-store-fail', [CompletionResultType]::ParameterName, 'When the store cannot be reached or trusted, or does not answer in time: retry under the local policy alone, run the command and send the attempt (open), or do not retry, with --breaker do not run the command, and with --throttle skip the attempt (closed). A lock has its own: --lock-fail')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: a line on stderr, or one JSON object on stdout')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'backoff;lock' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Print whether a lock is held, and by whom (pid, host, since when)')
            [CompletionResult]::new('reset', 'reset', [CompletionResultType]::ParameterValue, 'Clear a lock that no run holds (a killed holder''s record); one held by a live run only with --force. Say what it was')
            break
        }
        'backoff;lock;show' {
            [CompletionResult]::new('--budget-dir', '--budget-dir', [CompletionResultType]::ParameterName, 'Directory of the budgets'', breakers'' and throttles'' state files [default: $XDG_STATE_HOME/backoff, else ~/.local/state/backoff]')
            [CompletionResult]::new('--budget-store', '--budget-store', [CompletionResultType]::ParameterName, 'Keep budgets, breakers and throttles in Redis, shared by a fleet of hosts: redis://[user:password@]host[:port][/db], rediss:// for TLS, redis+unix:///path/to/socket[?db=N] for a Unix socket, or redis+cluster://host:port,host:port for a Redis Cluster (better given in the environment, where the password does not show in process lists)')
            [CompletionResult]::new('--budget-store-timeout', '--budget-store-timeout', [CompletionResultType]::ParameterName, 'How long a budget, breaker, throttle or lock decision may wait: for the Redis store, or for the lock of a state file; then --budget-store-fail (--lock-fail for a lock) decides (at most 1m)')
            [CompletionResult]::new('--budget-store-fail', '--budget-store-fail', [CompletionResultType]::ParameterName, 'When the store cannot be reached or trusted, or does not answer in time: retry under the local policy alone, run the command and send the attempt (open), or do not retry, with --breaker do not run the command, and with --throttle skip the attempt (closed). A lock has its own: --lock-fail')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'backoff;lock;reset' {
            [CompletionResult]::new('--budget-dir', '--budget-dir', [CompletionResultType]::ParameterName, 'Directory of the budgets'', breakers'' and throttles'' state files [default: $XDG_STATE_HOME/backoff, else ~/.local/state/backoff]')
            [CompletionResult]::new('--budget-store', '--budget-store', [CompletionResultType]::ParameterName, 'Keep budgets, breakers and throttles in Redis, shared by a fleet of hosts: redis://[user:password@]host[:port][/db], rediss:// for TLS, redis+unix:///path/to/socket[?db=N] for a Unix socket, or redis+cluster://host:port,host:port for a Redis Cluster (better given in the environment, where the password does not show in process lists)')
            [CompletionResult]::new('--budget-store-timeout', '--budget-store-timeout', [CompletionResultType]::ParameterName, 'How long a budget, breaker, throttle or lock decision may wait: for the Redis store, or for the lock of a state file; then --budget-store-fail (--lock-fail for a lock) decides (at most 1m)')
            [CompletionResult]::new('--budget-store-fail', '--budget-store-fail', [CompletionResultType]::ParameterName, 'When the store cannot be reached or trusted, or does not answer in time: retry under the local policy alone, run the command and send the attempt (open), or do not retry, with --breaker do not run the command, and with --throttle skip the attempt (closed). A lock has its own: --lock-fail')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: a line on stderr, or one JSON object on stdout')
            [CompletionResult]::new('--force', '--force', [CompletionResultType]::ParameterName, 'Remove the lock even though a run holds it: the holder ends its attempt and gives up (lock_lost) when it sees it gone, within a second for a file and at its next renewal for a lease in Redis; the next run takes the lock once that holder has ended')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'backoff;once' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Print the last success of a job (when, on which host, its run id), the current period, and whether it is done')
            [CompletionResult]::new('reset', 'reset', [CompletionResultType]::ParameterValue, 'Remove the record of a job''s last success, so that its next run does the job whatever the period; say what it was')
            break
        }
        'backoff;once;show' {
            [CompletionResult]::new('--once-per', '--once-per', [CompletionResultType]::ParameterName, 'The period to tell of (else the one the last success recorded)')
            [CompletionResult]::new('--budget-dir', '--budget-dir', [CompletionResultType]::ParameterName, 'Directory of the budgets'', breakers'' and throttles'' state files [default: $XDG_STATE_HOME/backoff, else ~/.local/state/backoff]')
            [CompletionResult]::new('--budget-store', '--budget-store', [CompletionResultType]::ParameterName, 'Keep budgets, breakers and throttles in Redis, shared by a fleet of hosts: redis://[user:password@]host[:port][/db], rediss:// for TLS, redis+unix:///path/to/socket[?db=N] for a Unix socket, or redis+cluster://host:port,host:port for a Redis Cluster (better given in the environment, where the password does not show in process lists)')
            [CompletionResult]::new('--budget-store-timeout', '--budget-store-timeout', [CompletionResultType]::ParameterName, 'How long a budget, breaker, throttle or lock decision may wait: for the Redis store, or for the lock of a state file; then --budget-store-fail (--lock-fail for a lock) decides (at most 1m)')
            [CompletionResult]::new('--budget-store-fail', '--budget-store-fail', [CompletionResultType]::ParameterName, 'When the store cannot be reached or trusted, or does not answer in time: retry under the local policy alone, run the command and send the attempt (open), or do not retry, with --breaker do not run the command, and with --throttle skip the attempt (closed). A lock has its own: --lock-fail')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'backoff;once;reset' {
            [CompletionResult]::new('--budget-dir', '--budget-dir', [CompletionResultType]::ParameterName, 'Directory of the budgets'', breakers'' and throttles'' state files [default: $XDG_STATE_HOME/backoff, else ~/.local/state/backoff]')
            [CompletionResult]::new('--budget-store', '--budget-store', [CompletionResultType]::ParameterName, 'Keep budgets, breakers and throttles in Redis, shared by a fleet of hosts: redis://[user:password@]host[:port][/db], rediss:// for TLS, redis+unix:///path/to/socket[?db=N] for a Unix socket, or redis+cluster://host:port,host:port for a Redis Cluster (better given in the environment, where the password does not show in process lists)')
            [CompletionResult]::new('--budget-store-timeout', '--budget-store-timeout', [CompletionResultType]::ParameterName, 'How long a budget, breaker, throttle or lock decision may wait: for the Redis store, or for the lock of a state file; then --budget-store-fail (--lock-fail for a lock) decides (at most 1m)')
            [CompletionResult]::new('--budget-store-fail', '--budget-store-fail', [CompletionResultType]::ParameterName, 'When the store cannot be reached or trusted, or does not answer in time: retry under the local policy alone, run the command and send the attempt (open), or do not retry, with --breaker do not run the command, and with --throttle skip the attempt (closed). A lock has its own: --lock-fail')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: a line on stderr, or one JSON object on stdout')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
