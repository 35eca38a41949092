# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_backoff_global_optspecs
    string join \n base= cap= factor= jitter= max-retries= attempts= forever delays= poll= seed= retry-on= stop-on= success-on= until-output= consecutive= until-failure= reset-after= on-start= on-retry= on-give-up= on-success= hook-timeout= timeout= signal= kill-after= idle-timeout= max-time= splay= preserve-status retry-if-output= stop-if-output= retry-after retry-after-pattern= retry-after-max= retry-after-jitter= idempotent preset= hold-stdout stream-stdout replay-stdin output= output-limit= budget= budget-ratio= budget-burst= budget-dir= budget-store= budget-store-timeout= budget-store-fail= breaker= breaker-failures= breaker-cooldown= breaker-exit= throttle= throttle-window= throttle-k= lock= lock-wait= lock-exit= once-per= lock-ttl= lock-fail= lock-replace lock-limit= ping= ping-start= ping-success= ping-fail= ping-timeout= ping-body-limit= alert-after= q/quiet v/verbose name= timestamps log-format= report= metrics-file= metrics-push= metrics-push-timeout= foreground generate= h/help V/version
end

function __fish_backoff_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_backoff_global_optspecs) -- $cmd 2>/dev/null
    or begin
        # Not parsed yet: an option waits for its value, which is completed.
        contains -- "$cmd[-1]" --base --cap --factor --jitter --max-retries --attempts --delays --poll --seed --retry-on --stop-on --success-on --until-output --consecutive --reset-after --on-start --on-retry --on-give-up --on-success --hook-timeout --timeout --signal --kill-after --idle-timeout --max-time --splay --retry-if-output --stop-if-output --retry-after-pattern --retry-after-max --retry-after-jitter --preset --output --output-limit --budget --budget-ratio --budget-burst --budget-dir --budget-store --budget-store-timeout --budget-store-fail --breaker --breaker-failures --breaker-cooldown --breaker-exit --throttle --throttle-window --throttle-k --lock --lock-wait --lock-exit --once-per --lock-ttl --lock-fail --lock-limit --ping --ping-start --ping-success --ping-fail --ping-timeout --ping-body-limit --alert-after --name --log-format --report --metrics-file --metrics-push --metrics-push-timeout --generate
        return
    end
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_backoff_using_subcommand
    set -l cmd (__fish_backoff_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c backoff -n "__fish_backoff_needs_command" -l base -d 'Upper bound of the first retry\'s delay' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l cap -d 'Longest delay' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l factor -d 'Growth of the bound per retry: finite, at least 1 (1 = constant)' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l jitter -d 'How a delay is drawn from its bound' -r -f -a "none\t'The delay is the bound itself'
full\t'Uniform in [0, upper)'
equal\t'upper/2 plus uniform in [0, upper/2)'
decorrelated\t'min(cap, uniform in [base, 3 × previous delay)); ignores --factor'"
complete -c backoff -n "__fish_backoff_needs_command" -l max-retries -d 'Retries after the first attempt' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l attempts -d 'The same limit counted as attempts (3 = 2 retries)' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l delays -d 'Explicit bounds instead of the formula, comma-separated (1s,5s,30s): the first retry\'s bound, the second\'s, ..., the last repeating; jitter applies to each. Not with --base, --factor or --cap' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l poll -d 'Poll at a fixed interval, with no retry limit' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l seed -d 'Seed of the jitter\'s random generator: same seed, same delays' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l retry-on -d 'Retry only these outcomes (codes, sig:TERM, timeout)' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l stop-on -d 'Never retry these outcomes; checked first' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l success-on -d 'Count these outcomes as success' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l until-output -d 'Succeed only on output with a line matching REGEX' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l consecutive -d 'Success needs N successful attempts in a row; a failure resets the count and is retried as usual' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l until-failure -d 'Run the command again while it succeeds, at most N runs (default: no limit); stop at the first failure and exit with its status, or 0 when every run succeeded' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l reset-after -d 'An attempt that ran at least this long before failing starts the retry count and the delays over, as if it were the first' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l on-start -d 'Run CMD with `sh -c` once, before the first attempt; its failure is told and the run goes on' -r -f -a "(__fish_complete_command)"
complete -c backoff -n "__fish_backoff_needs_command" -l on-retry -d 'Run CMD with `sh -c` at the start of each delay before a retry (its time counts against the delay); it sees BACKOFF_ATTEMPT, BACKOFF_LAST_STATUS, BACKOFF_NEXT_DELAY' -r -f -a "(__fish_complete_command)"
complete -c backoff -n "__fish_backoff_needs_command" -l on-give-up -d 'Run CMD with `sh -c` when the run ends without success; it sees BACKOFF_REASON (exhausted, stopped, deadline, budget, interrupted, failure_found) and BACKOFF_LAST_STATUS' -r -f -a "(__fish_complete_command)"
complete -c backoff -n "__fish_backoff_needs_command" -l on-success -d 'Run CMD with `sh -c` when the run succeeds' -r -f -a "(__fish_complete_command)"
complete -c backoff -n "__fish_backoff_needs_command" -l hook-timeout -d 'The longest a hook may run; then it is ended like a timed-out attempt' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l timeout -d 'Time limit of each attempt' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l signal -d 'Signal sent when an attempt times out (name or number)' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l kill-after -d 'How long a timed-out attempt may take to end before it is killed' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l idle-timeout -d 'An attempt that writes nothing to stdout or stderr for this long times out (outcome "timeout", limit idle), with --signal and --kill-after as for --timeout' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l max-time -d 'Time limit of the whole run' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l splay -d 'Wait in [0, DURATION) first, fixed per host' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l retry-if-output -d 'Retry an attempt that printed a line (stdout or stderr) matching REGEX; repeatable. The output still reaches you live, unchanged' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l stop-if-output -d 'Never retry an attempt that printed a line matching REGEX; beats every retry rule; repeatable' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l retry-after-pattern -d 'Find the Retry-After value elsewhere: the first capture group of REGEX holds it (implies --retry-after)' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l retry-after-max -d 'The longest a server\'s hint is obeyed: a hint above it ends the run at once, with the command\'s status' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l retry-after-jitter -d 'Jitter on a server\'s hint: the wait is hint × U[1, 1+J), never shorter than the hint nor longer than --retry-after-max (0: the hint exactly)' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l preset -d 'The retry rules of curl, wget or git' -r -f -a "curl\t'HTTP retry semantics for curl: transient transport failures and HTTP 408, 425, 429 and 5xx are retried, other 4xx are not'
wget\t'The same for wget: network failures (exit 4), protocol errors (7), and server errors (8) of HTTP 408, 425, 429 and 5xx are retried'
git\t'git\'s transient failures (the network, the server, a connection cut short, HTTP 429 and 5xx) are retried; a missing repository, failed authentication or a conflict is not'
none\t'No preset, not even the one of the program\'s name'"
complete -c backoff -n "__fish_backoff_needs_command" -l output -d 'on-failure: the output only if the run fails, for cron' -r -f -a "live\t'Passed on as it comes'
on-failure\t'Kept, and written out only when the run does not succeed'"
complete -c backoff -n "__fish_backoff_needs_command" -l output-limit -d 'With --output on-failure: the most output kept, its first and last halves (B, KB, KiB, MB, MiB, GB, GiB)' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l budget -d 'Share a retry budget with the backoff processes of the same KEY' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l budget-ratio -d 'Tokens a success deposits' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l budget-burst -d 'Most tokens a budget holds, and starts with' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l budget-dir -d 'Directory of the budgets\', breakers\' and throttles\' state files [default: $XDG_STATE_HOME/backoff, else ~/.local/state/backoff]' -r -F
complete -c backoff -n "__fish_backoff_needs_command" -l budget-store -d 'Keep budgets, breakers and throttles in Redis, shared by a fleet of hosts: redis://[user:password@]host[:port][/db], rediss:// for TLS, redis+unix:///path/to/socket[?db=N] for a Unix socket, or redis+cluster://host:port,host:port for a Redis Cluster (better given in the environment, where the password does not show in process lists)' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l budget-store-timeout -d 'How long a budget, breaker, throttle or lock decision may wait: for the Redis store, or for the lock of a state file; then --budget-store-fail (--lock-fail for a lock) decides (at most 1m)' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l budget-store-fail -d 'When the store cannot be reached or trusted, or does not answer in time: retry under the local policy alone, run the command and send the attempt (open), or do not retry, with --breaker do not run the command, and with --throttle skip the attempt (closed). A lock has its own: --lock-fail' -r -f -a "open\t'Retry under the local policy alone, and say so once'
closed\t'Do not retry'"
complete -c backoff -n "__fish_backoff_needs_command" -l breaker -d 'Share a circuit breaker with the backoff processes of the same KEY' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l breaker-failures -d 'Runs in a row that gave up that open the circuit' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l breaker-cooldown -d 'How long an open circuit stays open before a probe' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l breaker-exit -d 'Exit status of a run that an open circuit does not let run the command (75, EX_TEMPFAIL: try again later)' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l throttle -d 'Share an adaptive throttle with the backoff processes of the same KEY' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l throttle-window -d 'The span of time the throttle counts over (from 1s to 30d)' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l throttle-k -d 'K: nothing is skipped while the backend accepts more than one attempt in K, and the fleet sends about K times what it accepts (from 1 to 1000, at most three decimals)' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l lock -d 'At most one run of the same KEY at a time' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l lock-wait -d 'How long a run waits in turn for a held lock before it gives up' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l lock-exit -d 'Exit status of a run that finds the lock held (75, EX_TEMPFAIL)' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l once-per -d 'At most one successful run of the job per PERIOD, across every host sharing the store' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l lock-ttl -d 'How long a lease in Redis lasts unless renewed; the run renews it every third of that' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l lock-fail -d 'When the lock cannot be had for certain (its store cannot be reached, trusted or used): do not run the command and exit 75 (closed), or run it without the lock (open); either is said on a line that no output mode hides' -r -f -a "closed\t'Do not run the command: exit 75, reason lock_unavailable'
open\t'Run the command without the lock, and say so'"
complete -c backoff -n "__fish_backoff_needs_command" -l lock-limit -d 'At most N runs hold KEY at once, each in a slot of its own (a counting semaphore); 1 is a plain lock' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l ping -d 'Tell a monitor (healthchecks.io) the run\'s start and end' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l ping-start -d 'The URL of the start check-in, as given (overrides --ping\'s)' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l ping-success -d 'The URL of the check-in of a success, as given (overrides --ping\'s)' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l ping-fail -d 'The URL of the check-in of any other end, as given (overrides --ping\'s)' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l ping-timeout -d 'The longest the check-ins delay the end of the run, in all, retries included' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l ping-body-limit -d 'The most bytes of the end check-in\'s body: its summary line, then the end of the output, cut at its front' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l alert-after -d 'Alert only once N runs of the job in a row have failed' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l name -d 'Name the command in reports (default: the program\'s name)' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l log-format -d 'How backoff reports on stderr: text lines, one JSON object per event, GitHub Actions annotations and folds, or GitLab CI sections [default: github when GITHUB_ACTIONS is true, gitlab when GITLAB_CI is true, else text]' -r -f -a "text\t'Lines for people, each starting with \'backoff: \''
json\t'One JSON object per event, one per line'
github\t'Text, with each attempt in a ::group:: fold, ::warning:: on each retry and ::error:: when giving up'
gitlab\t'Text, with each attempt in a collapsed section of the GitLab CI job log, and a table of the attempts at the end'"
complete -c backoff -n "__fish_backoff_needs_command" -l report -d 'At exit, write a JSON summary of the run to FILE' -r -F
complete -c backoff -n "__fish_backoff_needs_command" -l metrics-file -d 'At exit, write Prometheus metrics of the run to FILE' -r -F
complete -c backoff -n "__fish_backoff_needs_command" -l metrics-push -d 'At exit, push the run\'s metrics to a Prometheus Pushgateway at URL' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l metrics-push-timeout -d 'The longest the metrics push delays the end of the run, retries included' -r -f
complete -c backoff -n "__fish_backoff_needs_command" -l generate -d 'Print a man page or a shell\'s completion script, and run nothing' -r -f -a "man\t'backoff(1)'
man-schedule\t'backoff-schedule(1)'
man-simulate\t'backoff-simulate(1)'
man-budget\t'backoff-budget(1)'
man-breaker\t'backoff-breaker(1)'
man-throttle\t'backoff-throttle(1)'
man-lock\t'backoff-lock(1)'
man-once\t'backoff-once(1)'
complete-bash\t'bash\'s (with bash-completion)'
complete-zsh\t'zsh\'s'
complete-fish\t'fish\'s'
complete-powershell\t'PowerShell\'s'
complete-elvish\t'elvish\'s'"
complete -c backoff -n "__fish_backoff_needs_command" -l forever -d 'No retry limit: retry until success or a stop rule'
complete -c backoff -n "__fish_backoff_needs_command" -l preserve-status -d 'When the last attempt timed out, exit with the command\'s own status instead of 124'
complete -c backoff -n "__fish_backoff_needs_command" -l retry-after -d 'Honour a server\'s Retry-After header line in the output (seconds or an HTTP-date): the next delay is at least that long, even above --cap'
complete -c backoff -n "__fish_backoff_needs_command" -l idempotent -d 'With --preset curl: the request may be repeated even when it is a POST or PATCH without an Idempotency-Key header, after a failure that leaves it unknown whether the server acted on it'
complete -c backoff -n "__fish_backoff_needs_command" -l hold-stdout -d 'Hold back each attempt\'s stdout; write only the stdout of the attempt that ends the run. --preset curl does this by default when curl writes the body to stdout'
complete -c backoff -n "__fish_backoff_needs_command" -l stream-stdout -d 'Pass each attempt\'s stdout on as it comes, even with --preset curl'
complete -c backoff -n "__fish_backoff_needs_command" -l replay-stdin -d 'Read stdin once, to its end, before the first attempt, and give every attempt the same bytes'
complete -c backoff -n "__fish_backoff_needs_command" -l lock-replace -d 'End the run that holds the lock and take it over (Kubernetes\' Replace)'
complete -c backoff -n "__fish_backoff_needs_command" -s q -l quiet -d 'Say nothing but backoff\'s own errors'
complete -c backoff -n "__fish_backoff_needs_command" -s v -l verbose -d 'Also say the command line, delay bounds and success'
complete -c backoff -n "__fish_backoff_needs_command" -l timestamps -d 'Start every text line backoff writes with the local time, for logs such as cron\'s'
complete -c backoff -n "__fish_backoff_needs_command" -l foreground -d 'Keep the command in backoff\'s process group, for programs that need the terminal; then signals reach only the command itself, not the processes it started'
complete -c backoff -n "__fish_backoff_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c backoff -n "__fish_backoff_needs_command" -s V -l version -d 'Print version'
complete -c backoff -n "__fish_backoff_needs_command" -a "schedule" -d 'Print the delays a policy produces, and run nothing'
complete -c backoff -n "__fish_backoff_needs_command" -a "simulate" -d 'Show why jitter matters, and what retries and a fleet\'s cron do to a server'
complete -c backoff -n "__fish_backoff_needs_command" -a "budget" -d 'Show or reset a retry budget shared by processes (see --budget)'
complete -c backoff -n "__fish_backoff_needs_command" -a "breaker" -d 'Show or reset a circuit breaker shared by processes (see --breaker)'
complete -c backoff -n "__fish_backoff_needs_command" -a "throttle" -d 'Show or reset a throttle shared by processes (see --throttle)'
complete -c backoff -n "__fish_backoff_needs_command" -a "lock" -d 'Show or reset a lock held by runs (see --lock)'
complete -c backoff -n "__fish_backoff_needs_command" -a "once" -d 'Show or reset a job\'s last success (see --once-per)'
complete -c backoff -n "__fish_backoff_using_subcommand schedule" -l base -d 'Upper bound of the first retry\'s delay' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand schedule" -l cap -d 'Longest delay' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand schedule" -l factor -d 'Growth of the bound per retry: finite, at least 1 (1 = constant)' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand schedule" -l jitter -d 'How a delay is drawn from its bound' -r -f -a "none\t'The delay is the bound itself'
full\t'Uniform in [0, upper)'
equal\t'upper/2 plus uniform in [0, upper/2)'
decorrelated\t'min(cap, uniform in [base, 3 × previous delay)); ignores --factor'"
complete -c backoff -n "__fish_backoff_using_subcommand schedule" -l max-retries -d 'Retries after the first attempt' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand schedule" -l attempts -d 'The same limit counted as attempts (3 = 2 retries)' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand schedule" -l delays -d 'Explicit bounds instead of the formula, comma-separated (1s,5s,30s): the first retry\'s bound, the second\'s, ..., the last repeating; jitter applies to each. Not with --base, --factor or --cap' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand schedule" -l poll -d 'Poll at a fixed interval, with no retry limit' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand schedule" -l seed -d 'Seed of the jitter\'s random generator: same seed, same delays' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand schedule" -l format -d 'Output format' -r -f -a "table\t'Aligned columns for people'
json\t'One JSON document'
csv\t'Comma-separated values with a header line'"
complete -c backoff -n "__fish_backoff_using_subcommand schedule" -l forever -d 'No retry limit: retry until success or a stop rule'
complete -c backoff -n "__fish_backoff_using_subcommand schedule" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c backoff -n "__fish_backoff_using_subcommand simulate" -l model -d 'The model: Brooker\'s experiment, a server past its capacity, or a fleet\'s cron' -r -f -a "contention\t'Brooker\'s experiment: clients contend to update one row'
overload\t'Clients at a steady rate, a server of fixed capacity, an outage'
cron\t'Hosts whose cron fires one job at :00: --splay, --lock, --once-per'"
complete -c backoff -n "__fish_backoff_using_subcommand simulate" -l clients -d 'Client counts: a list (10,50,100) or a range with a step (10-190/10); the overload and cron models take one count (cron: the hosts) [default: 10-190/10; overload, cron: 1000]' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand simulate" -l runs -d 'Runs per client count and strategy (contention) [default: 100]' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand simulate" -l strategy -d 'Strategies, comma-separated [default: contention: none, exponential, full, equal, decorrelated; overload: all but policy]' -r -f -a "none\t'No backoff: contention reads again at once; overload does not retry'
immediate\t'Overload: retries at once, with no delay'
exponential\t'e = min(cap, base · 2^n), no jitter'
full\t'Uniform in [0, e)'
equal\t'e/2 plus uniform in [0, e/2)'
decorrelated\t'min(cap, uniform in [base, 3 · previous sleep)), from base'
policy\t'Contention: backoff\'s own policy, from --base, --cap, --factor and --jitter'
full+budget\t'Overload: full jitter under a retry budget shared by all clients'
full+breaker\t'Overload: full jitter behind a circuit breaker shared by all clients'
full+throttle\t'Overload: full jitter behind an adaptive throttle shared by all clients'
full+budget+throttle\t'Overload: full jitter under the shared retry budget, behind the shared adaptive throttle'"
complete -c backoff -n "__fish_backoff_using_subcommand simulate" -l base -d 'Base of the delays [default: Brooker\'s 5ms; overload: 100ms]' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand simulate" -l cap -d 'Cap of the delays [default: Brooker\'s 2s; overload: 30s]' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand simulate" -l factor -d 'Growth per retry of the "policy" strategy, and of every overload strategy' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand simulate" -l jitter -d 'Jitter of the "policy" strategy (contention) [default: full]' -r -f -a "none\t'The delay is the bound itself'
full\t'Uniform in [0, upper)'
equal\t'upper/2 plus uniform in [0, upper/2)'
decorrelated\t'min(cap, uniform in [base, 3 × previous delay)); ignores --factor'"
complete -c backoff -n "__fish_backoff_using_subcommand simulate" -l seed -d 'Seed of the simulation: same seed, same output [default: random]' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand simulate" -l format -d 'Output format; a contention table is followed by a terminal chart' -r -f -a "table\t'Aligned columns for people'
json\t'One JSON document'
csv\t'Comma-separated values with a header line'
svg\t'The overload or cron model\'s chart, as SVG on stdout'"
complete -c backoff -n "__fish_backoff_using_subcommand simulate" -l plot -d 'Also draw the charts into an SVG file, replaced whole or left as it was (a temporary file renamed over it), and only a regular file' -r -F
complete -c backoff -n "__fish_backoff_using_subcommand simulate" -l scenario -d 'A set of the values below, each of which may be given instead [default: outage]' -r -f -a "outage\t'A full outage of 10s that the server survives'
metastable\t'The same outage and a deeper queue: the overload outlives it'"
complete -c backoff -n "__fish_backoff_using_subcommand simulate" -l rate -d 'Requests a second each client makes, at a fixed interval [default: 1]' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand simulate" -l capacity -d 'Attempts a second the server works through; with --model cron, requests a second the service answers [default: 2000; cron: 100]' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand simulate" -l queue -d 'Most attempts waiting in the server\'s queue; more are refused at once [default: 1000; metastable: 4000]' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand simulate" -l timeout -d 'How long a client waits for an attempt\'s answer [default: 1s]' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand simulate" -l brownout -d 'The share of the capacity left during the outage, from 0 (none) to 1 [default: 0]' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand simulate" -l outage-start -d 'When the capacity drops [default: 10s]' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand simulate" -l outage-length -d 'How long it stays down [default: 10s]' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand simulate" -l horizon -d 'How long the simulation runs [default: 60s]' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand simulate" -l max-retries -d 'Retries after a request\'s first attempt [default: 3]' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand simulate" -l budget-ratio -d 'Tokens a success deposits in the budget of "full+budget", one for all clients [default: 0.1]' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand simulate" -l budget-burst -d 'Most tokens that budget holds, and starts with [default: 10]' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand simulate" -l breaker-failures -d 'Requests in a row that gave up that open the breaker of "full+breaker", one for all clients [default: 5]' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand simulate" -l breaker-cooldown -d 'How long that breaker stays open before a probe [default: 5s]' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand simulate" -l throttle-window -d 'The window over which the adaptive throttle of "full+throttle" and "full+budget+throttle", one for all clients, counts requests and accepts, from 1s to 30 days [default: 2m]' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand simulate" -l throttle-k -d 'That throttle\'s K, from 1 to 1000: it skips attempts when the requests pass K times the accepts [default: 2]' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand simulate" -l splay -d 'The --splay window: each host waits its own place in it, as the real --splay places the host; at most 1h, the cron\'s period [default: 2m]' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand simulate" -l job -d 'How long a run of the job lasts once the service has answered its request [default: 5s]' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand simulate" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c backoff -n "__fish_backoff_using_subcommand budget; and not __fish_seen_subcommand_from show reset" -s h -l help -d 'Print help'
complete -c backoff -n "__fish_backoff_using_subcommand budget; and not __fish_seen_subcommand_from show reset" -f -a "show" -d 'Print the tokens left in a budget, and the burst and ratio its state records (else those of the options, said to be theirs)'
complete -c backoff -n "__fish_backoff_using_subcommand budget; and not __fish_seen_subcommand_from show reset" -f -a "reset" -d 'Fill a budget to its burst again: the one its state records, or with --budget-burst or --budget-ratio those given; say what it held'
complete -c backoff -n "__fish_backoff_using_subcommand budget; and __fish_seen_subcommand_from show" -l budget-ratio -d 'Tokens a success deposits' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand budget; and __fish_seen_subcommand_from show" -l budget-burst -d 'Most tokens a budget holds, and starts with' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand budget; and __fish_seen_subcommand_from show" -l budget-dir -d 'Directory of the budgets\', breakers\' and throttles\' state files [default: $XDG_STATE_HOME/backoff, else ~/.local/state/backoff]' -r -F
complete -c backoff -n "__fish_backoff_using_subcommand budget; and __fish_seen_subcommand_from show" -l budget-store -d 'Keep budgets, breakers and throttles in Redis, shared by a fleet of hosts: redis://[user:password@]host[:port][/db], rediss:// for TLS, redis+unix:///path/to/socket[?db=N] for a Unix socket, or redis+cluster://host:port,host:port for a Redis Cluster (better given in the environment, where the password does not show in process lists)' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand budget; and __fish_seen_subcommand_from show" -l budget-store-timeout -d 'How long a budget, breaker, throttle or lock decision may wait: for the Redis store, or for the lock of a state file; then --budget-store-fail (--lock-fail for a lock) decides (at most 1m)' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand budget; and __fish_seen_subcommand_from show" -l budget-store-fail -d 'When the store cannot be reached or trusted, or does not answer in time: retry under the local policy alone, run the command and send the attempt (open), or do not retry, with --breaker do not run the command, and with --throttle skip the attempt (closed). A lock has its own: --lock-fail' -r -f -a "open\t'Retry under the local policy alone, and say so once'
closed\t'Do not retry'"
complete -c backoff -n "__fish_backoff_using_subcommand budget; and __fish_seen_subcommand_from show" -l format -d 'Output format' -r -f -a "text\t'One line for people'
json\t'One JSON object'"
complete -c backoff -n "__fish_backoff_using_subcommand budget; and __fish_seen_subcommand_from show" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c backoff -n "__fish_backoff_using_subcommand budget; and __fish_seen_subcommand_from reset" -l budget-ratio -d 'Tokens a success deposits' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand budget; and __fish_seen_subcommand_from reset" -l budget-burst -d 'Most tokens a budget holds, and starts with' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand budget; and __fish_seen_subcommand_from reset" -l budget-dir -d 'Directory of the budgets\', breakers\' and throttles\' state files [default: $XDG_STATE_HOME/backoff, else ~/.local/state/backoff]' -r -F
complete -c backoff -n "__fish_backoff_using_subcommand budget; and __fish_seen_subcommand_from reset" -l budget-store -d 'Keep budgets, breakers and throttles in Redis, shared by a fleet of hosts: redis://[user:password@]host[:port][/db], rediss:// for TLS, redis+unix:///path/to/socket[?db=N] for a Unix socket, or redis+cluster://host:port,host:port for a Redis Cluster (better given in the environment, where the password does not show in process lists)' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand budget; and __fish_seen_subcommand_from reset" -l budget-store-timeout -d 'How long a budget, breaker, throttle or lock decision may wait: for the Redis store, or for the lock of a state file; then --budget-store-fail (--lock-fail for a lock) decides (at most 1m)' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand budget; and __fish_seen_subcommand_from reset" -l budget-store-fail -d 'When the store cannot be reached or trusted, or does not answer in time: retry under the local policy alone, run the command and send the attempt (open), or do not retry, with --breaker do not run the command, and with --throttle skip the attempt (closed). A lock has its own: --lock-fail' -r -f -a "open\t'Retry under the local policy alone, and say so once'
closed\t'Do not retry'"
complete -c backoff -n "__fish_backoff_using_subcommand budget; and __fish_seen_subcommand_from reset" -l format -d 'Output format: a line on stderr, or one JSON object on stdout' -r -f -a "text\t'One line for people'
json\t'One JSON object'"
complete -c backoff -n "__fish_backoff_using_subcommand budget; and __fish_seen_subcommand_from reset" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c backoff -n "__fish_backoff_using_subcommand breaker; and not __fish_seen_subcommand_from show reset" -s h -l help -d 'Print help'
complete -c backoff -n "__fish_backoff_using_subcommand breaker; and not __fish_seen_subcommand_from show reset" -f -a "show" -d 'Print a circuit\'s state: closed, open (since and until when) or half-open'
complete -c backoff -n "__fish_backoff_using_subcommand breaker; and not __fish_seen_subcommand_from show reset" -f -a "reset" -d 'Close a circuit, and start its count of failed runs again; say what it was'
complete -c backoff -n "__fish_backoff_using_subcommand breaker; and __fish_seen_subcommand_from show" -l budget-dir -d 'Directory of the budgets\', breakers\' and throttles\' state files [default: $XDG_STATE_HOME/backoff, else ~/.local/state/backoff]' -r -F
complete -c backoff -n "__fish_backoff_using_subcommand breaker; and __fish_seen_subcommand_from show" -l budget-store -d 'Keep budgets, breakers and throttles in Redis, shared by a fleet of hosts: redis://[user:password@]host[:port][/db], rediss:// for TLS, redis+unix:///path/to/socket[?db=N] for a Unix socket, or redis+cluster://host:port,host:port for a Redis Cluster (better given in the environment, where the password does not show in process lists)' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand breaker; and __fish_seen_subcommand_from show" -l budget-store-timeout -d 'How long a budget, breaker, throttle or lock decision may wait: for the Redis store, or for the lock of a state file; then --budget-store-fail (--lock-fail for a lock) decides (at most 1m)' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand breaker; and __fish_seen_subcommand_from show" -l budget-store-fail -d 'When the store cannot be reached or trusted, or does not answer in time: retry under the local policy alone, run the command and send the attempt (open), or do not retry, with --breaker do not run the command, and with --throttle skip the attempt (closed). A lock has its own: --lock-fail' -r -f -a "open\t'Retry under the local policy alone, and say so once'
closed\t'Do not retry'"
complete -c backoff -n "__fish_backoff_using_subcommand breaker; and __fish_seen_subcommand_from show" -l format -d 'Output format' -r -f -a "text\t'One line for people'
json\t'One JSON object'"
complete -c backoff -n "__fish_backoff_using_subcommand breaker; and __fish_seen_subcommand_from show" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c backoff -n "__fish_backoff_using_subcommand breaker; and __fish_seen_subcommand_from reset" -l budget-dir -d 'Directory of the budgets\', breakers\' and throttles\' state files [default: $XDG_STATE_HOME/backoff, else ~/.local/state/backoff]' -r -F
complete -c backoff -n "__fish_backoff_using_subcommand breaker; and __fish_seen_subcommand_from reset" -l budget-store -d 'Keep budgets, breakers and throttles in Redis, shared by a fleet of hosts: redis://[user:password@]host[:port][/db], rediss:// for TLS, redis+unix:///path/to/socket[?db=N] for a Unix socket, or redis+cluster://host:port,host:port for a Redis Cluster (better given in the environment, where the password does not show in process lists)' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand breaker; and __fish_seen_subcommand_from reset" -l budget-store-timeout -d 'How long a budget, breaker, throttle or lock decision may wait: for the Redis store, or for the lock of a state file; then --budget-store-fail (--lock-fail for a lock) decides (at most 1m)' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand breaker; and __fish_seen_subcommand_from reset" -l budget-store-fail -d 'When the store cannot be reached or trusted, or does not answer in time: retry under the local policy alone, run the command and send the attempt (open), or do not retry, with --breaker do not run the command, and with --throttle skip the attempt (closed). A lock has its own: --lock-fail' -r -f -a "open\t'Retry under the local policy alone, and say so once'
closed\t'Do not retry'"
complete -c backoff -n "__fish_backoff_using_subcommand breaker; and __fish_seen_subcommand_from reset" -l format -d 'Output format: a line on stderr, or one JSON object on stdout' -r -f -a "text\t'One line for people'
json\t'One JSON object'"
complete -c backoff -n "__fish_backoff_using_subcommand breaker; and __fish_seen_subcommand_from reset" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c backoff -n "__fish_backoff_using_subcommand throttle; and not __fish_seen_subcommand_from show reset" -s h -l help -d 'Print help'
complete -c backoff -n "__fish_backoff_using_subcommand throttle; and not __fish_seen_subcommand_from show reset" -f -a "show" -d 'Print a throttle\'s counts over its window (requests, of which skipped, and accepts), and the probability that the next attempt is skipped under --throttle-k'
complete -c backoff -n "__fish_backoff_using_subcommand throttle; and not __fish_seen_subcommand_from show reset" -f -a "reset" -d 'Empty a throttle\'s window: nothing counted, nothing skipped; say what it held'
complete -c backoff -n "__fish_backoff_using_subcommand throttle; and __fish_seen_subcommand_from show" -l budget-dir -d 'Directory of the budgets\', breakers\' and throttles\' state files [default: $XDG_STATE_HOME/backoff, else ~/.local/state/backoff]' -r -F
complete -c backoff -n "__fish_backoff_using_subcommand throttle; and __fish_seen_subcommand_from show" -l budget-store -d 'Keep budgets, breakers and throttles in Redis, shared by a fleet of hosts: redis://[user:password@]host[:port][/db], rediss:// for TLS, redis+unix:///path/to/socket[?db=N] for a Unix socket, or redis+cluster://host:port,host:port for a Redis Cluster (better given in the environment, where the password does not show in process lists)' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand throttle; and __fish_seen_subcommand_from show" -l budget-store-timeout -d 'How long a budget, breaker, throttle or lock decision may wait: for the Redis store, or for the lock of a state file; then --budget-store-fail (--lock-fail for a lock) decides (at most 1m)' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand throttle; and __fish_seen_subcommand_from show" -l budget-store-fail -d 'When the store cannot be reached or trusted, or does not answer in time: retry under the local policy alone, run the command and send the attempt (open), or do not retry, with --breaker do not run the command, and with --throttle skip the attempt (closed). A lock has its own: --lock-fail' -r -f -a "open\t'Retry under the local policy alone, and say so once'
closed\t'Do not retry'"
complete -c backoff -n "__fish_backoff_using_subcommand throttle; and __fish_seen_subcommand_from show" -l throttle-window -d 'The span of time the throttle counts over (from 1s to 30d)' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand throttle; and __fish_seen_subcommand_from show" -l throttle-k -d 'K: nothing is skipped while the backend accepts more than one attempt in K, and the fleet sends about K times what it accepts (from 1 to 1000, at most three decimals)' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand throttle; and __fish_seen_subcommand_from show" -l format -d 'Output format' -r -f -a "text\t'One line for people'
json\t'One JSON object'"
complete -c backoff -n "__fish_backoff_using_subcommand throttle; and __fish_seen_subcommand_from show" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c backoff -n "__fish_backoff_using_subcommand throttle; and __fish_seen_subcommand_from reset" -l budget-dir -d 'Directory of the budgets\', breakers\' and throttles\' state files [default: $XDG_STATE_HOME/backoff, else ~/.local/state/backoff]' -r -F
complete -c backoff -n "__fish_backoff_using_subcommand throttle; and __fish_seen_subcommand_from reset" -l budget-store -d 'Keep budgets, breakers and throttles in Redis, shared by a fleet of hosts: redis://[user:password@]host[:port][/db], rediss:// for TLS, redis+unix:///path/to/socket[?db=N] for a Unix socket, or redis+cluster://host:port,host:port for a Redis Cluster (better given in the environment, where the password does not show in process lists)' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand throttle; and __fish_seen_subcommand_from reset" -l budget-store-timeout -d 'How long a budget, breaker, throttle or lock decision may wait: for the Redis store, or for the lock of a state file; then --budget-store-fail (--lock-fail for a lock) decides (at most 1m)' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand throttle; and __fish_seen_subcommand_from reset" -l budget-store-fail -d 'When the store cannot be reached or trusted, or does not answer in time: retry under the local policy alone, run the command and send the attempt (open), or do not retry, with --breaker do not run the command, and with --throttle skip the attempt (closed). A lock has its own: --lock-fail' -r -f -a "open\t'Retry under the local policy alone, and say so once'
closed\t'Do not retry'"
complete -c backoff -n "__fish_backoff_using_subcommand throttle; and __fish_seen_subcommand_from reset" -l format -d 'Output format: a line on stderr, or one JSON object on stdout' -r -f -a "text\t'One line for people'
json\t'One JSON object'"
complete -c backoff -n "__fish_backoff_using_subcommand throttle; and __fish_seen_subcommand_from reset" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c backoff -n "__fish_backoff_using_subcommand lock; and not __fish_seen_subcommand_from show reset" -s h -l help -d 'Print help'
complete -c backoff -n "__fish_backoff_using_subcommand lock; and not __fish_seen_subcommand_from show reset" -f -a "show" -d 'Print whether a lock is held, and by whom (pid, host, since when)'
complete -c backoff -n "__fish_backoff_using_subcommand lock; and not __fish_seen_subcommand_from show reset" -f -a "reset" -d 'Clear a lock that no run holds (a killed holder\'s record); one held by a live run only with --force. Say what it was'
complete -c backoff -n "__fish_backoff_using_subcommand lock; and __fish_seen_subcommand_from show" -l budget-dir -d 'Directory of the budgets\', breakers\' and throttles\' state files [default: $XDG_STATE_HOME/backoff, else ~/.local/state/backoff]' -r -F
complete -c backoff -n "__fish_backoff_using_subcommand lock; and __fish_seen_subcommand_from show" -l budget-store -d 'Keep budgets, breakers and throttles in Redis, shared by a fleet of hosts: redis://[user:password@]host[:port][/db], rediss:// for TLS, redis+unix:///path/to/socket[?db=N] for a Unix socket, or redis+cluster://host:port,host:port for a Redis Cluster (better given in the environment, where the password does not show in process lists)' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand lock; and __fish_seen_subcommand_from show" -l budget-store-timeout -d 'How long a budget, breaker, throttle or lock decision may wait: for the Redis store, or for the lock of a state file; then --budget-store-fail (--lock-fail for a lock) decides (at most 1m)' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand lock; and __fish_seen_subcommand_from show" -l budget-store-fail -d 'When the store cannot be reached or trusted, or does not answer in time: retry under the local policy alone, run the command and send the attempt (open), or do not retry, with --breaker do not run the command, and with --throttle skip the attempt (closed). A lock has its own: --lock-fail' -r -f -a "open\t'Retry under the local policy alone, and say so once'
closed\t'Do not retry'"
complete -c backoff -n "__fish_backoff_using_subcommand lock; and __fish_seen_subcommand_from show" -l format -d 'Output format' -r -f -a "text\t'One line for people'
json\t'One JSON object'"
complete -c backoff -n "__fish_backoff_using_subcommand lock; and __fish_seen_subcommand_from show" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c backoff -n "__fish_backoff_using_subcommand lock; and __fish_seen_subcommand_from reset" -l budget-dir -d 'Directory of the budgets\', breakers\' and throttles\' state files [default: $XDG_STATE_HOME/backoff, else ~/.local/state/backoff]' -r -F
complete -c backoff -n "__fish_backoff_using_subcommand lock; and __fish_seen_subcommand_from reset" -l budget-store -d 'Keep budgets, breakers and throttles in Redis, shared by a fleet of hosts: redis://[user:password@]host[:port][/db], rediss:// for TLS, redis+unix:///path/to/socket[?db=N] for a Unix socket, or redis+cluster://host:port,host:port for a Redis Cluster (better given in the environment, where the password does not show in process lists)' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand lock; and __fish_seen_subcommand_from reset" -l budget-store-timeout -d 'How long a budget, breaker, throttle or lock decision may wait: for the Redis store, or for the lock of a state file; then --budget-store-fail (--lock-fail for a lock) decides (at most 1m)' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand lock; and __fish_seen_subcommand_from reset" -l budget-store-fail -d 'When the store cannot be reached or trusted, or does not answer in time: retry under the local policy alone, run the command and send the attempt (open), or do not retry, with --breaker do not run the command, and with --throttle skip the attempt (closed). A lock has its own: --lock-fail' -r -f -a "open\t'Retry under the local policy alone, and say so once'
closed\t'Do not retry'"
complete -c backoff -n "__fish_backoff_using_subcommand lock; and __fish_seen_subcommand_from reset" -l format -d 'Output format: a line on stderr, or one JSON object on stdout' -r -f -a "text\t'One line for people'
json\t'One JSON object'"
complete -c backoff -n "__fish_backoff_using_subcommand lock; and __fish_seen_subcommand_from reset" -l force -d 'Remove the lock even though a run holds it: the holder ends its attempt and gives up (lock_lost) when it sees it gone, within a second for a file and at its next renewal for a lease in Redis; the next run takes the lock once that holder has ended'
complete -c backoff -n "__fish_backoff_using_subcommand lock; and __fish_seen_subcommand_from reset" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c backoff -n "__fish_backoff_using_subcommand once; and not __fish_seen_subcommand_from show reset" -s h -l help -d 'Print help'
complete -c backoff -n "__fish_backoff_using_subcommand once; and not __fish_seen_subcommand_from show reset" -f -a "show" -d 'Print the last success of a job (when, on which host, its run id), the current period, and whether it is done'
complete -c backoff -n "__fish_backoff_using_subcommand once; and not __fish_seen_subcommand_from show reset" -f -a "reset" -d 'Remove the record of a job\'s last success, so that its next run does the job whatever the period; say what it was'
complete -c backoff -n "__fish_backoff_using_subcommand once; and __fish_seen_subcommand_from show" -l once-per -d 'The period to tell of (else the one the last success recorded)' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand once; and __fish_seen_subcommand_from show" -l budget-dir -d 'Directory of the budgets\', breakers\' and throttles\' state files [default: $XDG_STATE_HOME/backoff, else ~/.local/state/backoff]' -r -F
complete -c backoff -n "__fish_backoff_using_subcommand once; and __fish_seen_subcommand_from show" -l budget-store -d 'Keep budgets, breakers and throttles in Redis, shared by a fleet of hosts: redis://[user:password@]host[:port][/db], rediss:// for TLS, redis+unix:///path/to/socket[?db=N] for a Unix socket, or redis+cluster://host:port,host:port for a Redis Cluster (better given in the environment, where the password does not show in process lists)' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand once; and __fish_seen_subcommand_from show" -l budget-store-timeout -d 'How long a budget, breaker, throttle or lock decision may wait: for the Redis store, or for the lock of a state file; then --budget-store-fail (--lock-fail for a lock) decides (at most 1m)' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand once; and __fish_seen_subcommand_from show" -l budget-store-fail -d 'When the store cannot be reached or trusted, or does not answer in time: retry under the local policy alone, run the command and send the attempt (open), or do not retry, with --breaker do not run the command, and with --throttle skip the attempt (closed). A lock has its own: --lock-fail' -r -f -a "open\t'Retry under the local policy alone, and say so once'
closed\t'Do not retry'"
complete -c backoff -n "__fish_backoff_using_subcommand once; and __fish_seen_subcommand_from show" -l format -d 'Output format' -r -f -a "text\t'One line for people'
json\t'One JSON object'"
complete -c backoff -n "__fish_backoff_using_subcommand once; and __fish_seen_subcommand_from show" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c backoff -n "__fish_backoff_using_subcommand once; and __fish_seen_subcommand_from reset" -l budget-dir -d 'Directory of the budgets\', breakers\' and throttles\' state files [default: $XDG_STATE_HOME/backoff, else ~/.local/state/backoff]' -r -F
complete -c backoff -n "__fish_backoff_using_subcommand once; and __fish_seen_subcommand_from reset" -l budget-store -d 'Keep budgets, breakers and throttles in Redis, shared by a fleet of hosts: redis://[user:password@]host[:port][/db], rediss:// for TLS, redis+unix:///path/to/socket[?db=N] for a Unix socket, or redis+cluster://host:port,host:port for a Redis Cluster (better given in the environment, where the password does not show in process lists)' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand once; and __fish_seen_subcommand_from reset" -l budget-store-timeout -d 'How long a budget, breaker, throttle or lock decision may wait: for the Redis store, or for the lock of a state file; then --budget-store-fail (--lock-fail for a lock) decides (at most 1m)' -r -f
complete -c backoff -n "__fish_backoff_using_subcommand once; and __fish_seen_subcommand_from reset" -l budget-store-fail -d 'When the store cannot be reached or trusted, or does not answer in time: retry under the local policy alone, run the command and send the attempt (open), or do not retry, with --breaker do not run the command, and with --throttle skip the attempt (closed). A lock has its own: --lock-fail' -r -f -a "open\t'Retry under the local policy alone, and say so once'
closed\t'Do not retry'"
complete -c backoff -n "__fish_backoff_using_subcommand once; and __fish_seen_subcommand_from reset" -l format -d 'Output format: a line on stderr, or one JSON object on stdout' -r -f -a "text\t'One line for people'
json\t'One JSON object'"
complete -c backoff -n "__fish_backoff_using_subcommand once; and __fish_seen_subcommand_from reset" -s h -l help -d 'Print help (see more with \'--help\')'

# The command backoff runs, and its arguments: after `--`, or from the first
# word that is neither an option, an option's value nor a subcommand, they
# are completed as the command's own completion would.

# Prints the command's words before the cursor, and succeeds, if the cursor
# is in the command.
function __fish_backoff_command
    set -l words (commandline -opc)
    set -l n (count $words)
    set -l i 2
    while test $i -le $n
        switch $words[$i]
            case --
                set -l rest $words[$i..-1]
                set -e rest[1]
                printf '%s\n' $rest
                return 0
            case --base --cap --factor --jitter --max-retries --attempts --delays --poll --seed --retry-on --stop-on --success-on --until-output --consecutive --reset-after --on-start --on-retry --on-give-up --on-success --hook-timeout --timeout --signal --kill-after --idle-timeout --max-time --splay --retry-if-output --stop-if-output --retry-after-pattern --retry-after-max --retry-after-jitter --preset --output --output-limit --budget --budget-ratio --budget-burst --budget-dir --budget-store --budget-store-timeout --budget-store-fail --breaker --breaker-failures --breaker-cooldown --breaker-exit --throttle --throttle-window --throttle-k --lock --lock-wait --lock-exit --once-per --lock-ttl --lock-fail --lock-limit --ping --ping-start --ping-success --ping-fail --ping-timeout --ping-body-limit --alert-after --name --log-format --report --metrics-file --metrics-push --metrics-push-timeout --generate
                set i (math $i + 2)
            case --until-failure
                set -l next (math $i + 1)
                if string match -qr '^[0-9]+$' -- "$words[$next]"
                    set i (math $i + 2)
                else
                    set i (math $i + 1)
                end
            case '-*'
                set i (math $i + 1)
            case '*'
                if test $i -eq 2; and contains -- $words[$i] schedule simulate budget breaker throttle lock once
                    return 1
                end
                printf '%s\n' $words[$i..-1]
                return 0
        end
    end
    test $i -eq (math $n + 1); and not string match -q -- '-*' (commandline -ct)
end

function __fish_backoff_complete_command
    __fish_complete_subcommand --commandline (__fish_backoff_command) (commandline -ct)
end

complete -c backoff -n "__fish_backoff_command >/dev/null" -x -a "(__fish_backoff_complete_command)"

# backoff's own words are no file names, a budget's key included, but an
# option's value that its completion says is one (-F); the command's
# arguments are completed above.
complete -c backoff -f
