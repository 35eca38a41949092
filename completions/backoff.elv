
use builtin;
use str;

set edit:completion:arg-completer[backoff] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'backoff'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'backoff'= {
            cand --base 'Upper bound of the first retry''s delay'
            cand --cap 'Longest delay'
            cand --factor 'Growth of the bound per retry: finite, at least 1 (1 = constant)'
            cand --jitter 'How a delay is drawn from its bound'
            cand --max-retries 'Retries after the first attempt'
            cand --attempts 'The same limit counted as attempts (3 = 2 retries)'
            cand --delays 'Explicit bounds instead of the formula, comma-separated (1s,5s,30s): the first retry''s bound, the second''s, ..., the last repeating; jitter applies to each. Not with --base, --factor or --cap'
            cand --poll 'Poll at a fixed interval, with no retry limit'
            cand --seed 'Seed of the jitter''s random generator: same seed, same delays'
            cand --retry-on 'Retry only these outcomes (codes, sig:TERM, timeout)'
            cand --stop-on 'Never retry these outcomes; checked first'
            cand --success-on 'Count these outcomes as success'
            cand --until-output 'Succeed only on output with a line matching REGEX'
            cand --consecutive 'Success needs N successful attempts in a row; a failure resets the count and is retried as usual'
            cand --until-failure 'Run the command again while it succeeds, at most N runs (default: no limit); stop at the first failure and exit with its status, or 0 when every run succeeded'
            cand --reset-after 'An attempt that ran at least this long before failing starts the retry count and the delays over, as if it were the first'
            cand --on-start 'Run CMD with `sh -c` once, before the first attempt; its failure is told and the run goes on'
            cand --on-retry 'Run CMD with `sh -c` at the start of each delay before a retry (its time counts against the delay); it sees BACKOFF_ATTEMPT, BACKOFF_LAST_STATUS, BACKOFF_NEXT_DELAY'
            cand --on-give-up 'Run CMD with `sh -c` when the run ends without success; it sees BACKOFF_REASON (exhausted, stopped, deadline, budget, interrupted, failure_found) and BACKOFF_LAST_STATUS'
            cand --on-success 'Run CMD with `sh -c` when the run succeeds'
            cand --hook-timeout 'The longest a hook may run; then it is ended like a timed-out attempt'
            cand --timeout 'Time limit of each attempt'
            cand --signal 'Signal sent when an attempt times out (name or number)'
            cand --kill-after 'How long a timed-out attempt may take to end before it is killed'
            cand --idle-timeout 'An attempt that writes nothing to stdout or stderr for this long times out (outcome "timeout", limit idle), with --signal and --kill-after as for --timeout'
            cand --max-time 'Time limit of the whole run; backoff exits by it plus --kill-after'
            cand --splay 'Wait before the first attempt, in [0, DURATION): the same on every run of a host and job, different from host to host'
            cand --retry-if-output 'Retry an attempt that printed a line (stdout or stderr) matching REGEX; repeatable. The output still reaches you live, unchanged'
            cand --stop-if-output 'Never retry an attempt that printed a line matching REGEX; beats every retry rule; repeatable'
            cand --retry-after-pattern 'Find the Retry-After value elsewhere: the first capture group of REGEX holds it (implies --retry-after)'
            cand --retry-after-max 'The longest a server''s hint is obeyed: a hint above it ends the run at once, with the command''s status'
            cand --retry-after-jitter 'Jitter on a server''s hint: the wait is hint × U[1, 1+J), never shorter than the hint nor longer than --retry-after-max (0: the hint exactly)'
            cand --preset 'The retry rules of curl, wget or git (by default the program''s own)'
            cand --output 'on-failure: keep the run''s output (stdout, stderr, backoff''s lines) and write it out only if the run does not succeed, for cron'
            cand --output-limit 'With --output on-failure: the most output kept, its first and last halves (B, KiB, MiB, GiB)'
            cand --budget 'Share a retry budget with the backoff processes of the same KEY'
            cand --budget-ratio 'Tokens a success deposits'
            cand --budget-burst 'Most tokens a budget holds, and starts with'
            cand --budget-dir 'Directory of the budgets'', breakers'' and throttles'' state files [default: $XDG_STATE_HOME/backoff, else ~/.local/state/backoff]'
            cand --budget-store 'Keep budgets, breakers and throttles in Redis, shared by a fleet of hosts: redis://[user:password@]host[:port][/db], rediss:// for TLS, or redis+cluster://host:port,host:port for a Redis Cluster (better given in the environment, where the password does not show in process lists)'
            cand --budget-store-timeout 'How long a budget, breaker or throttle decision may wait: for the Redis store, or for the lock of a state file; then --budget-store-fail decides (at most 1m)'
            cand --budget-store-fail 'When the store cannot be reached or trusted, or does not answer in time: retry under the local policy alone, run the command and send the attempt (open), or do not retry, with --breaker do not run the command, and with --throttle skip the attempt (closed)'
            cand --breaker 'Share a circuit breaker with the backoff processes of the same KEY'
            cand --breaker-failures 'Runs in a row that gave up that open the circuit'
            cand --breaker-cooldown 'How long an open circuit stays open before a probe'
            cand --breaker-exit 'Exit status of a run that an open circuit does not let run the command (75, EX_TEMPFAIL: try again later)'
            cand --throttle 'Share an adaptive throttle with the backoff processes of the same KEY'
            cand --throttle-window 'The span of time the throttle counts over (from 1s to 30d)'
            cand --throttle-k 'K: nothing is skipped while the backend accepts more than one attempt in K, and the fleet sends about K times what it accepts (from 1 to 1000, at most three decimals)'
            cand --lock 'At most one run of the same KEY at a time: a run that finds it held does not run the command'
            cand --lock-wait 'How long a run waits in turn for a held lock before it gives up'
            cand --lock-exit 'Exit status of a run that finds the lock held (75, EX_TEMPFAIL)'
            cand --lock-ttl 'How long a lease in Redis lasts unless renewed (at least 1s); the run renews it every third of that'
            cand --name 'Name the command in reports (default: the program''s name)'
            cand --log-format 'How backoff reports on stderr: text lines, one JSON object per event, GitHub Actions annotations and folds, or GitLab CI sections [default: github when GITHUB_ACTIONS is true, gitlab when GITLAB_CI is true, else text]'
            cand --report 'At exit, write a JSON summary of the run to FILE'
            cand --metrics-file 'At exit, write Prometheus metrics of the run to FILE'
            cand --generate 'Print a man page or a shell''s completion script, and run nothing'
            cand --forever 'No retry limit: retry until success or a stop rule'
            cand --preserve-status 'When the last attempt timed out, exit with the command''s own status instead of 124'
            cand --retry-after 'Honour a server''s Retry-After header line in the output (seconds or an HTTP-date): the next delay is at least that long, even above --cap'
            cand --idempotent 'With --preset curl: the request may be repeated even when it is a POST or PATCH without an Idempotency-Key header, after a failure that leaves it unknown whether the server acted on it'
            cand --hold-stdout 'Hold back each attempt''s stdout; write only the stdout of the attempt that ends the run. --preset curl does this by default when curl writes the body to stdout'
            cand --stream-stdout 'Pass each attempt''s stdout on as it comes, even with --preset curl'
            cand --replay-stdin 'Read stdin once, to its end, before the first attempt, and give every attempt the same bytes'
            cand -q 'Say nothing but backoff''s own errors'
            cand --quiet 'Say nothing but backoff''s own errors'
            cand -v 'Also say the command line, delay bounds and success'
            cand --verbose 'Also say the command line, delay bounds and success'
            cand --timestamps 'Start every text line backoff writes with the local time, for logs such as cron''s'
            cand --foreground 'Keep the command in backoff''s process group, for programs that need the terminal; then signals reach only the command itself, not the processes it started'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
            cand schedule 'Print the delays a policy produces, and run nothing'
            cand simulate 'Show why jitter matters, and what retries do to an overloaded server'
            cand budget 'Show or reset a retry budget shared by processes (see --budget)'
            cand breaker 'Show or reset a circuit breaker shared by processes (see --breaker)'
            cand throttle 'Show or reset a throttle shared by processes (see --throttle)'
            cand lock 'Show or reset a lock held by runs (see --lock)'
        }
        &'backoff;schedule'= {
            cand --base 'Upper bound of the first retry''s delay'
            cand --cap 'Longest delay'
            cand --factor 'Growth of the bound per retry: finite, at least 1 (1 = constant)'
            cand --jitter 'How a delay is drawn from its bound'
            cand --max-retries 'Retries after the first attempt'
            cand --attempts 'The same limit counted as attempts (3 = 2 retries)'
            cand --delays 'Explicit bounds instead of the formula, comma-separated (1s,5s,30s): the first retry''s bound, the second''s, ..., the last repeating; jitter applies to each. Not with --base, --factor or --cap'
            cand --poll 'Poll at a fixed interval, with no retry limit'
            cand --seed 'Seed of the jitter''s random generator: same seed, same delays'
            cand --format 'Output format'
            cand --forever 'No retry limit: retry until success or a stop rule'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'backoff;simulate'= {
            cand --model 'The model: Brooker''s experiment, or a server past its capacity'
            cand --clients 'Client counts: a list (10,50,100) or a range with a step (10-190/10); the overload model takes one count [default: 10-190/10; overload: 1000]'
            cand --runs 'Runs per client count and strategy (contention) [default: 100]'
            cand --strategy 'Strategies, comma-separated [default: contention: none, exponential, full, equal, decorrelated; overload: all but policy]'
            cand --base 'Base of the delays [default: Brooker''s 5ms; overload: 100ms]'
            cand --cap 'Cap of the delays [default: Brooker''s 2s; overload: 30s]'
            cand --factor 'Growth per retry of the "policy" strategy, and of every overload strategy'
            cand --jitter 'Jitter of the "policy" strategy (contention) [default: full]'
            cand --seed 'Seed of the simulation: same seed, same output [default: random]'
            cand --format 'Output format; a contention table is followed by a terminal chart'
            cand --plot 'Also draw the charts into an SVG file, replaced whole or left as it was (a temporary file renamed over it), and only a regular file'
            cand --scenario 'A set of the values below, each of which may be given instead [default: outage]'
            cand --rate 'Requests a second each client makes, at a fixed interval [default: 1]'
            cand --capacity 'Attempts a second the server works through [default: 2000]'
            cand --queue 'Most attempts waiting in the server''s queue; more are refused at once [default: 1000; metastable: 4000]'
            cand --timeout 'How long a client waits for an attempt''s answer [default: 1s]'
            cand --brownout 'The share of the capacity left during the outage, from 0 (none) to 1 [default: 0]'
            cand --outage-start 'When the capacity drops [default: 10s]'
            cand --outage-length 'How long it stays down [default: 10s]'
            cand --horizon 'How long the simulation runs [default: 60s]'
            cand --max-retries 'Retries after a request''s first attempt [default: 3]'
            cand --budget-ratio 'Tokens a success deposits in the budget of "full+budget", one for all clients [default: 0.1]'
            cand --budget-burst 'Most tokens that budget holds, and starts with [default: 10]'
            cand --breaker-failures 'Requests in a row that gave up that open the breaker of "full+breaker", one for all clients [default: 5]'
            cand --breaker-cooldown 'How long that breaker stays open before a probe [default: 5s]'
            cand --throttle-window 'The window over which the adaptive throttle of "full+throttle" and "full+budget+throttle", one for all clients, counts requests and accepts, from 1s to 30 days [default: 2m]'
            cand --throttle-k 'That throttle''s K, from 1 to 1000: it skips attempts when the requests pass K times the accepts [default: 2]'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'backoff;budget'= {
            cand -h 'Print help'
            cand --help 'Print help'
            cand show 'Print the tokens left in a budget, and the burst and ratio its state records (else those of the options, said to be theirs)'
            cand reset 'Fill a budget to its burst again: the one its state records, or with --budget-burst or --budget-ratio those given; say what it held'
        }
        &'backoff;budget;show'= {
            cand --budget-ratio 'Tokens a success deposits'
            cand --budget-burst 'Most tokens a budget holds, and starts with'
            cand --budget-dir 'Directory of the budgets'', breakers'' and throttles'' state files [default: $XDG_STATE_HOME/backoff, else ~/.local/state/backoff]'
            cand --budget-store 'Keep budgets, breakers and throttles in Redis, shared by a fleet of hosts: redis://[user:password@]host[:port][/db], rediss:// for TLS, or redis+cluster://host:port,host:port for a Redis Cluster (better given in the environment, where the password does not show in process lists)'
            cand --budget-store-timeout 'How long a budget, breaker or throttle decision may wait: for the Redis store, or for the lock of a state file; then --budget-store-fail decides (at most 1m)'
            cand --budget-store-fail 'When the store cannot be reached or trusted, or does not answer in time: retry under the local policy alone, run the command and send the attempt (open), or do not retry, with --breaker do not run the command, and with --throttle skip the attempt (closed)'
            cand --format 'Output format'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'backoff;budget;reset'= {
            cand --budget-ratio 'Tokens a success deposits'
            cand --budget-burst 'Most tokens a budget holds, and starts with'
            cand --budget-dir 'Directory of the budgets'', breakers'' and throttles'' state files [default: $XDG_STATE_HOME/backoff, else ~/.local/state/backoff]'
            cand --budget-store 'Keep budgets, breakers and throttles in Redis, shared by a fleet of hosts: redis://[user:password@]host[:port][/db], rediss:// for TLS, or redis+cluster://host:port,host:port for a Redis Cluster (better given in the environment, where the password does not show in process lists)'
            cand --budget-store-timeout 'How long a budget, breaker or throttle decision may wait: for the Redis store, or for the lock of a state file; then --budget-store-fail decides (at most 1m)'
            cand --budget-store-fail 'When the store cannot be reached or trusted, or does not answer in time: retry under the local policy alone, run the command and send the attempt (open), or do not retry, with --breaker do not run the command, and with --throttle skip the attempt (closed)'
            cand --format 'Output format: a line on stderr, or one JSON object on stdout'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'backoff;breaker'= {
            cand -h 'Print help'
            cand --help 'Print help'
            cand show 'Print a circuit''s state: closed, open (since and until when) or half-open'
            cand reset 'Close a circuit, and start its count of failed runs again; say what it was'
        }
        &'backoff;breaker;show'= {
            cand --budget-dir 'Directory of the budgets'', breakers'' and throttles'' state files [default: $XDG_STATE_HOME/backoff, else ~/.local/state/backoff]'
            cand --budget-store 'Keep budgets, breakers and throttles in Redis, shared by a fleet of hosts: redis://[user:password@]host[:port][/db], rediss:// for TLS, or redis+cluster://host:port,host:port for a Redis Cluster (better given in the environment, where the password does not show in process lists)'
            cand --budget-store-timeout 'How long a budget, breaker or throttle decision may wait: for the Redis store, or for the lock of a state file; then --budget-store-fail decides (at most 1m)'
            cand --budget-store-fail 'When the store cannot be reached or trusted, or does not answer in time: retry under the local policy alone, run the command and send the attempt (open), or do not retry, with --breaker do not run the command, and with --throttle skip the attempt (closed)'
            cand --format 'Output format'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'backoff;breaker;reset'= {
            cand --budget-dir 'Directory of the budgets'', breakers'' and throttles'' state files [default: $XDG_STATE_HOME/backoff, else ~/.local/state/backoff]'
            cand --budget-store 'Keep budgets, breakers and throttles in Redis, shared by a fleet of hosts: redis://[user:password@]host[:port][/db], rediss:// for TLS, or redis+cluster://host:port,host:port for a Redis Cluster (better given in the environment, where the password does not show in process lists)'
            cand --budget-store-timeout 'How long a budget, breaker or throttle decision may wait: for the Redis store, or for the lock of a state file; then --budget-store-fail decides (at most 1m)'
            cand --budget-store-fail 'When the store cannot be reached or trusted, or does not answer in time: retry under the local policy alone, run the command and send the attempt (open), or do not retry, with --breaker do not run the command, and with --throttle skip the attempt (closed)'
            cand --format 'Output format: a line on stderr, or one JSON object on stdout'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'backoff;throttle'= {
            cand -h 'Print help'
            cand --help 'Print help'
            cand show 'Print a throttle''s counts over its window (requests, of which skipped, and accepts), and the probability that the next attempt is skipped under --throttle-k'
            cand reset 'Empty a throttle''s window: nothing counted, nothing skipped; say what it held'
        }
        &'backoff;throttle;show'= {
            cand --budget-dir 'Directory of the budgets'', breakers'' and throttles'' state files [default: $XDG_STATE_HOME/backoff, else ~/.local/state/backoff]'
            cand --budget-store 'Keep budgets, breakers and throttles in Redis, shared by a fleet of hosts: redis://[user:password@]host[:port][/db], rediss:// for TLS, or redis+cluster://host:port,host:port for a Redis Cluster (better given in the environment, where the password does not show in process lists)'
            cand --budget-store-timeout 'How long a budget, breaker or throttle decision may wait: for the Redis store, or for the lock of a state file; then --budget-store-fail decides (at most 1m)'
            cand --budget-store-fail 'When the store cannot be reached or trusted, or does not answer in time: retry under the local policy alone, run the command and send the attempt (open), or do not retry, with --breaker do not run the command, and with --throttle skip the attempt (closed)'
            cand --throttle-window 'The span of time the throttle counts over (from 1s to 30d)'
            cand --throttle-k 'K: nothing is skipped while the backend accepts more than one attempt in K, and the fleet sends about K times what it accepts (from 1 to 1000, at most three decimals)'
            cand --format 'Output format'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'backoff;throttle;reset'= {
            cand --budget-dir 'Directory of the budgets'', breakers'' and throttles'' state files [default: $XDG_STATE_HOME/backoff, else ~/.local/state/backoff]'
            cand --budget-store 'Keep budgets, breakers and throttles in Redis, shared by a fleet of hosts: redis://[user:password@]host[:port][/db], rediss:// for TLS, or redis+cluster://host:port,host:port for a Redis Cluster (better given in the environment, where the password does not show in process lists)'
            cand --budget-store-timeout 'How long a budget, breaker or throttle decision may wait: for the Redis store, or for the lock of a state file; then --budget-store-fail decides (at most 1m)'
            cand --budget-store-fail 'When the store cannot be reached or trusted, or does not answer in time: retry under the local policy alone, run the command and send the attempt (open), or do not retry, with --breaker do not run the command, and with --throttle skip the attempt (closed)'
            cand --format 'Output format: a line on stderr, or one JSON object on stdout'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'backoff;lock'= {
            cand -h 'Print help'
            cand --help 'Print help'
            cand show 'Print whether a lock is held, and by whom (pid, host, since when)'
            cand reset 'Clear a lock that no run holds (a killed holder''s record); one held by a live run only with --force. Say what it was'
        }
        &'backoff;lock;show'= {
            cand --budget-dir 'Directory of the budgets'', breakers'' and throttles'' state files [default: $XDG_STATE_HOME/backoff, else ~/.local/state/backoff]'
            cand --budget-store 'Keep budgets, breakers and throttles in Redis, shared by a fleet of hosts: redis://[user:password@]host[:port][/db], rediss:// for TLS, or redis+cluster://host:port,host:port for a Redis Cluster (better given in the environment, where the password does not show in process lists)'
            cand --budget-store-timeout 'How long a budget, breaker or throttle decision may wait: for the Redis store, or for the lock of a state file; then --budget-store-fail decides (at most 1m)'
            cand --budget-store-fail 'When the store cannot be reached or trusted, or does not answer in time: retry under the local policy alone, run the command and send the attempt (open), or do not retry, with --breaker do not run the command, and with --throttle skip the attempt (closed)'
            cand --format 'Output format'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'backoff;lock;reset'= {
            cand --budget-dir 'Directory of the budgets'', breakers'' and throttles'' state files [default: $XDG_STATE_HOME/backoff, else ~/.local/state/backoff]'
            cand --budget-store 'Keep budgets, breakers and throttles in Redis, shared by a fleet of hosts: redis://[user:password@]host[:port][/db], rediss:// for TLS, or redis+cluster://host:port,host:port for a Redis Cluster (better given in the environment, where the password does not show in process lists)'
            cand --budget-store-timeout 'How long a budget, breaker or throttle decision may wait: for the Redis store, or for the lock of a state file; then --budget-store-fail decides (at most 1m)'
            cand --budget-store-fail 'When the store cannot be reached or trusted, or does not answer in time: retry under the local policy alone, run the command and send the attempt (open), or do not retry, with --breaker do not run the command, and with --throttle skip the attempt (closed)'
            cand --format 'Output format: a line on stderr, or one JSON object on stdout'
            cand --force 'Remove the lock even though a run holds it: that run goes on, and the next run takes the lock beside it'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
    ]
    $completions[$command]
}
