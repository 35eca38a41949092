//! The hand-written sections of backoff(1), in roff: what the options'
//! own entries (from the clap definition) leave to a section of its own.
//! `man::main_page` puts them after the options, in the order of
//! `man::SECTIONS`.

pub(super) const ENVIRONMENT: &str = r".SH ENVIRONMENT
.TP
\fBBACKOFF_BASE\fR, \fBBACKOFF_CAP\fR, \fBBACKOFF_FACTOR\fR, \fBBACKOFF_JITTER\fR, \fBBACKOFF_MAX_RETRIES\fR, \fBBACKOFF_TIMEOUT\fR, \fBBACKOFF_MAX_TIME\fR, \fBBACKOFF_BUDGET_STORE\fR
Defaults for the options of the same name. A flag on the command line wins over the environment.
\fBBACKOFF_BUDGET_STORE\fR, whose URL may hold a password, is removed from the environment of the command and of the hooks; the others are passed on (they hold no secret, and a backoff that the command runs follows them too), so a backoff inside that should share the store is given \fB\-\-budget\-store\fR itself.
A bare number in \fBBACKOFF_TIMEOUT\fR is seconds (the form backoff gives its command, below); elsewhere a duration needs its unit.
.TP
\fBBACKOFF_TIMESTAMPS\fR
Turns \fB\-\-timestamps\fR on: \fB0\fR, \fBfalse\fR, \fBno\fR, \fBoff\fR (or \fBn\fR, \fBf\fR) and an empty value mean off, any other value on.
.TP
\fBTZ\fR
The zone of \fB\-\-timestamps\fR' local times; without it, \fB/etc/localtime\fR.
.TP
\fBBACKOFF_ATTEMPT\fR, \fBBACKOFF_MAX_ATTEMPTS\fR, \fBBACKOFF_LAST_STATUS\fR
Set for the command: the attempt number (from 1), the number of attempts allowed (empty without a fixed number: \fB\-\-forever\fR, \fB\-\-consecutive\fR, \fB\-\-reset\-after\fR), and from the second attempt on, how the previous attempt ended: its exit code, \fBsig:NAME\fR, \fBtimeout\fR or \fBunmet\fR.
.TP
\fBBACKOFF_DEADLINE\fR, \fBBACKOFF_TIMEOUT\fR
Set for the command with \fB\-\-max\-time\fR and \fB\-\-timeout\fR, so that it can shorten its own limits: the run's deadline as a Unix time in seconds with milliseconds (\fB1764600000.250\fR), and the limit of each attempt in seconds (\fB2.5\fR). Without those options neither is set, and inherited values of these names are not passed on. A backoff that the command runs reads \fBBACKOFF_TIMEOUT\fR as its own \fB\-\-timeout\fR.
.PP
Any other variable whose name starts with \fBBACKOFF_\fR gets a warning at the start of the run (not with \fB\-q\fR; a \fBwarning\fR event in json) that names the variable backoff reads nearest to it in spelling: \fBBACKOFF_BASS is not a variable backoff reads; did you mean BACKOFF_BASE?\fR. The variables backoff sets for a command or a hook are not taken for mistakes, as another backoff they run sees them.
";

pub(super) const CLASSIFICATION: &str = r#".SH "CLASSIFYING ATTEMPTS"
Each attempt ends in one outcome: an exit code, death by a signal, or a failure to start. It is classified in this order:
.IP 1. 4
The command could not be started: stop (127 if not found, 126 otherwise). Never retried.
.IP 2. 4
A \fB\-\-stop\-on\fR rule matches: stop.
.IP 3. 4
A \fB\-\-success\-on\fR rule matches (default: exit code 0): success. With \fB\-\-until\-output\fR, only if the attempt also printed a line that one of its patterns matches; otherwise the outcome is \fBunmet\fR (printed \fBexit 0, condition not met\fR), and classification goes on with it: \fB\-\-stop\-on unmet\fR stops, and it is retried by default, also beside \fB\-\-retry\-if\-output\fR.
.IP 4. 4
A \fB\-\-retry\-on\fR rule matches: retry. Without \fB\-\-retry\-on\fR, every other outcome is retried except death by SIGINT or SIGPIPE (an interrupt and a closed downstream pipe are never transient). With \fB\-\-retry\-on\fR, only what it names is retried: name \fBunmet\fR (and \fBtimeout\fR) there if they should be.
.IP 5. 4
Otherwise: stop.
.PP
A rule list is comma\-separated: an exit code (\fB3\fR), a range (\fB1\-5\fR), a signal (\fBsig:TERM\fR, \fBsig:15\fR, \fBsig:SIGTERM\fR, case\-insensitive), \fBtimeout\fR (either time limit) or \fBunmet\fR. A code both retried and stopped is an error. sysexits' 75 (EX_TEMPFAIL, "try again later") is not special by default; add \fB\-\-retry\-on 75\fR with \fB\-\-stop\-on\fR for the rest if that is the contract of your command.
.PP
The delay before retry \fIn\fR (0 for the first retry) is drawn from \fIupper(n)\fR = min(cap, base \(mu factor^n): \fBnone\fR sleeps upper(n); \fBfull\fR draws uniformly in [0, upper(n)); \fBequal\fR draws upper(n)/2 plus uniformly in [0, upper(n)/2); \fBdecorrelated\fR draws min(cap, uniform in [base, 3 \(mu previous delay)), starting from base, and ignores \fB\-\-factor\fR. No delay ever exceeds the cap, and none is slept after the last attempt. Decorrelated jitter piles late retries onto the cap exactly (its clamp); full jitter, the default, spreads them.
.PP
\fB\-\-delays\fR \fILIST\fR replaces the formula with explicit bounds: \fIupper(n)\fR is the \fIn\fRth of the list, and the last one for every retry after it (\fB\-\-delays 1s,5s,30s\fR: 1s, 5s, then 30s for ever). Jitter draws from each bound as from a computed one (full: [0, bound), equal: [bound/2, bound)); decorrelated jitter, which draws from the previous delay rather than from a bound, is refused with it on the command line (from \fBBACKOFF_JITTER\fR it gives way to full jitter), and a bound of zero needs \fB\-\-jitter none\fR. \fB\-\-base\fR, \fB\-\-cap\fR or \fB\-\-factor\fR on the command line beside \fB\-\-delays\fR or \fB\-\-poll\fR is refused (exit 125); the same in the environment is ignored. \fB\-\-poll\fR \fID\fR is \fB\-\-base\fR \fID\fR \fB\-\-cap\fR \fID\fR \fB\-\-factor 1 \-\-forever\fR with \fB\-\-jitter none\fR, unless \fB\-\-jitter\fR, \fB\-\-max\-retries\fR or \fB\-\-attempts\fR are given on the command line (a retry limit or a jitter of the environment's does not apply to it). \fBbackoff schedule\fR shows both.
"#;

pub(super) const GOALS: &str = r#".SH "WHAT ENDS A RUN"
By default a run ends at the first success. These options change what ends it.
.TP
\fB\-\-until\-output\fR \fIREGEX\fR
An attempt whose exit counts as success succeeds only if it printed a line, on stdout or stderr, that one of the patterns (the option is repeatable) matches; lines are matched as for \fB\-\-retry\-if\-output\fR, and the output still reaches you live. Otherwise its outcome is \fBunmet\fR: \fBattempt 4 exit 0, condition not met; retrying in 2.00s\fR, then \fBcondition met on attempt 5 after 8.05s\fR (said without \fB\-v\fR).
.TP
\fB\-\-consecutive\fR \fIN\fR
Success needs \fIN\fR successful attempts in a row: \fBattempt 2 succeeded (2 of 3 in a row); next in 80ms\fR. A failure resets the streak and is retried as usual; the retry limit counts retries after failures only, so successes do not use it up. A run whose next attempt would start after \fB\-\-max\-time\fR before the streak is complete exits 1 (124 when the deadline cuts an attempt short, as always).
.TP
\fB\-\-until\-failure\fR [\fIN\fR]
The other way round, to hunt a flaky command: it runs again while it succeeds, at most \fIN\fR runs (no limit without \fIN\fR), and the first failure ends the run with that failure's status: \fBrun 37 failed (exit 1) after 36 successes in 2m 11s\fR.
.TP
\fB\-\-reset\-after\fR \fIDURATION\fR
A failed attempt that ran at least \fIDURATION\fR resets the retry count and the delays to the start, as if it were the first failure, as kubelet does for a container that ran long enough; the reset is said on a line of its own (JSON: \fBreset\fR). With it, \fBbackoff \-\-forever \-\-reset\-after 10m \-\- ./worker\fR is a small supervisor whose crash after a week of health waits the first delay, not the cap.
.PP
A run that ends unmet (retries exhausted, \fB\-\-max\-time\fR, \fB\-\-stop\-on unmet\fR) exits 1, as \fBgrep\fR(1) does when no line matches; the command's \fBBACKOFF_LAST_STATUS\fR is then \fBunmet\fR.
.PP
With \fB\-\-until\-failure\fR, when every run succeeded, when the next run would start after \fB\-\-max\-time\fR, or when \fB\-\-max\-time\fR cuts a run short (the deadline of the hunt, not a failure of the command; a run that \fB\-\-timeout\fR ends is a failure), backoff says \fBno failure\fR and exits 0. Every failure counts, whatever \fB\-\-retry\-on\fR and \fB\-\-stop\-on\fR say; \fB\-\-max\-retries\fR, \fB\-\-attempts\fR, \fB\-\-forever\fR and \fB\-\-consecutive\fR given with it are refused. Since \fIN\fR is optional, put \fB\-\-\fR before a command when you give none (\fBbackoff \-\-until\-failure \-\- make test\fR).
.PP
Between attempts after a success (\fB\-\-consecutive\fR, \fB\-\-until\-failure\fR), the delay is the policy's first one, drawn anew: a success starts the curve over. The limit of \fB\-\-max\-retries\fR counts retries after failures since the start or the last reset, so with \fB\-\-consecutive\fR or \fB\-\-reset\-after\fR the lines do not show a fixed number of attempts (\fBattempt 9\fR, not \fBattempt 9/7\fR), and \fBBACKOFF_MAX_ATTEMPTS\fR is empty; with \fB\-\-until\-failure\fR \fIN\fR it is \fIN\fR.
"#;

pub(super) const HOOKS: &str = r".SH HOOKS
\fB\-\-on\-retry\fR, \fB\-\-on\-give\-up\fR and \fB\-\-on\-success\fR each take a shell command, run by \fBsh \-c\fR (the command itself never goes through a shell), in a process group of its own, with standard input on /dev/null and its output on backoff's stderr. It sees \fBBACKOFF_ATTEMPT\fR (attempts made), \fBBACKOFF_MAX_ATTEMPTS\fR and \fBBACKOFF_LAST_STATUS\fR (how the last attempt ended); \fB\-\-on\-retry\fR also \fBBACKOFF_NEXT_DELAY\fR (seconds), and \fB\-\-on\-give\-up\fR \fBBACKOFF_REASON\fR: exhausted, stopped (a stop rule, or a command that cannot start), deadline, budget, interrupted or failure_found.
.PP
\fB\-\-on\-retry\fR runs at the start of each delay before a retry (not between the runs of \fB\-\-consecutive\fR or \fB\-\-until\-failure\fR, which retry nothing); its time counts against the delay, and the next attempt starts when both are over. It is bounded by \fB\-\-max\-time\fR too: when it takes the time left, no attempt follows and the run gives up with the last attempt's status. \fB\-\-on\-give\-up\fR runs when the run ends without success, after a signal too (reason interrupted; a second signal ends it), and \fB\-\-on\-success\fR when it succeeds (a success whose held stdout could not all be written out, and which so exits otherwise than 0, runs \fB\-\-on\-give\-up\fR instead); both come after the run's end; with \fB\-\-max\-time\fR they run within the \fB\-\-kill\-after\fR that backoff has after the deadline: such a hook gets \fB\-\-signal\fR at the deadline or halfway through the time left until backoff exits, whichever is later, unless \fB\-\-hook\-timeout\fR comes first, and SIGKILL by the end of that time. So that such a hook has time even after a command that ignores \fB\-\-signal\fR, an attempt gets SIGKILL no later than halfway from its \fB\-\-signal\fR to backoff's exit when a closing hook is given (halfway through \fB\-\-kill\-after\fR when the deadline ends it); a hook with no time left is not run, and a line says so.
.PP
Every hook is bounded by \fB\-\-hook\-timeout\fR (default 30s), after which its group gets \fB\-\-signal\fR, then SIGKILL after \fB\-\-kill\-after\fR, and what is left of the group is killed. Nothing a hook starts outlives it: when its shell ends on its own, what it left in its group (\fBsleep 300 &\fR) gets SIGTERM, then SIGKILL after \fB\-\-kill\-after\fR if it is still running, before backoff goes on, as systemd ends a service's processes when the service ends; the guard watches the group meanwhile (see SIGNALS). A process that left the group (\fBsetsid\fR) is out of reach. A terminating signal to backoff is passed on to the hook's group as to an attempt's, and ends the run. A signal during \fB\-\-on\-give\-up\fR or \fB\-\-on\-success\fR ends backoff by that signal, and everything written at the end says so, as the exit status does: the line \fBinterrupted by SIGTERM during the \-\-on\-give\-up hook\fR, the JSON event \fBinterrupted\fR (\fBduring\fR: on_give_up or on_success), the run report's reason interrupted, and under GitHub Actions the step's outcome cancelled. A hook is never retried; its failure (an exit other than 0, a signal, a timeout) is told on one line, not with \fB\-q\fR, and changes nothing of backoff's exit status. JSON events: \fBhook\fR (\fBhook\fR: on_retry, on_give_up or on_success; \fBoutcome\fR; \fBexit\fR; \fBduration_seconds\fR; \fBerror\fR when it could not start or had no time left; \fBbounded_by_max_time\fR when \fB\-\-max\-time\fR set its time limit); the run report: \fBhooks\fR (each with \fBhook\fR, \fBafter_attempt\fR, \fBoutcome\fR, \fBduration_seconds\fR).
";

pub(super) const OUTPUT: &str = r#".SH "OUTPUT, INPUT AND SERVERS"
By default the command's standard input, output and error are backoff's own, and backoff adds no copy and no buffering. Only the options below, \fB\-\-until\-output\fR and \fB\-\-idle\-timeout\fR, make backoff read the command's output, through pipes; it then reaches you live and unchanged, in order on each stream, binary output and a last line without a newline included.
.SS "Output rules: \-\-retry\-if\-output, \-\-stop\-if\-output"
Each line of stdout and stderr is matched (a trailing carriage return is ignored). Lines up to 1 MiB are matched whole; a longer line is matched in windows of 1 MiB that overlap by 64 KiB, so that a match of up to 64 KiB is found wherever it lies, and memory stays bounded (each window is matched with the bytes around it, so \fB^\fR and \fB$\fR still mean the line's start and end).
.PP
A stop match beats every retry rule and even success; a retry match retries like \fB\-\-retry\-on\fR, and like it turns the default of retrying every failure off. The syntax is that of the Rust \fBregex\fR crate.
.PP
The patterns of \fB\-\-until\-output\fR, \fB\-\-retry\-if\-output\fR and \fB\-\-stop\-if\-output\fR together may hold at most 64 KiB of text and take at most 16 MiB compiled, as the crate counts it, and one of them at most 8 MiB (each pattern is charged the smallest power of two, from 4 KiB and from its length, it fits in); the pattern that passes a limit is refused, before the rest are compiled, so that an oversized set is refused in a fraction of a second and some 50 MB. Unicode classes are large: \fB\\w{64}\fR takes some 3 MiB, \fB\\w{200}\fR is past the limit, \fB(?\-u)\\w{200}\fR (ASCII classes) takes 32 KiB; the refusal says what \fB(?\-u)\fR at the start of the pattern, or of each one, would take, where that fits.
.PP
A Unicode word boundary, \fB\\b\fR, stops the fast search on a line with a non\-ASCII byte, and such lines are matched many times more slowly: \fB(?\-u:\\b)\fR is an ASCII boundary, which does not.
.SS "Servers' hints: \-\-retry\-after, \-\-retry\-after\-pattern"
With \fB\-\-retry\-after\fR, a line \fBRetry\-After: \fR\fIvalue\fR (case\-insensitive, as curl prints headers with \fB\-i\fR or \fB\-D /dev/stderr\fR), or with \fB\-\-retry\-after\-pattern\fR \fIREGEX\fR the first capture group of \fIREGEX\fR, gives the server's hint: delay\-seconds or an HTTP\-date (RFC 9110 \(sc10.2.3); what \fIREGEX\fR finds may also be a Unix time, in seconds (above 10^9), milliseconds (above 10^12), microseconds (above 10^15) or nanoseconds (above 10^18).
.PP
Only the headers of the last response count: a status line (\fBHTTP/1.1 302 Found\fR, curl's \fB< HTTP/2 429\fR with \fB\-v\fR, wget's with \fB\-S\fR) starts a new response and forgets the headers before it, so that a \fBRetry\-After\fR on a redirect that curl \fB\-L\fR or wget followed does not apply to the response after it (what \fIREGEX\fR found stays).
With a preset, a header line counts only in a response's head, from its status line to the empty line that ends it, so that a body (curl's \fB\-i\fR or \fB\-\-fail\-with\-body\fR) is not read as headers; and only on the stream that the program writes heads to: with curl's \fB\-v\fR or \fB\-D /dev/stderr\fR, or wget's \fB\-S\fR, stderr, so that a body on stdout is never a response, even a line of it that looks like a status line.
.PP
When no \fBRetry\-After\fR is seen, rate limits give the hint: the reset of a policy with no request left, and on a 429 or 503 also of one that does not say how many are left; of several, the one with the longest wait. A policy is \fBX\-RateLimit\-Remaining\fR and \fBX\-RateLimit\-Reset\fR (or \fBRateLimit\-Remaining\fR and \fBRateLimit\-Reset\fR, beside \fBRateLimit\-Limit\fR), an item of the IETF \fBRateLimit\fR field's list with its \fBr=\fR requests left and \fBt=\fR reset (\fB"minute";r=0;t=30, "day";r=0;t=3600\fR), or an earlier draft's \fBRateLimit: limit=10, remaining=0, reset=30\fR; \fBRateLimit\-Policy\fR says no reset and is not read. A reset is seconds, or a Unix time in seconds, milliseconds, microseconds or nanoseconds, told apart by its size as above. A time in the past asks for no wait.
.PP
The last hint an attempt printed sets a floor for the next delay, above \fB\-\-cap\fR if need be, and the report says so. The wait is the hint times a factor drawn uniformly in [1, 1+\fB\-\-retry\-after\-jitter\fR) (default 0.2; 0 waits the hint exactly), never shorter than the hint nor longer than \fB\-\-retry\-after\-max\fR, so that clients told the same time do not all come back at once; with \fB\-\-seed\fR it is reproducible, and it leaves the policy's own delays unchanged.
.PP
A hint above \fB\-\-retry\-after\-max\fR (default 5m, env BACKOFF_RETRY_AFTER_MAX) is not obeyed: the run ends at once with the command's status, and the line names the hint and the ceiling (JSON: \fBnext\fR hint_too_long, with \fBhint_seconds\fR and \fBretry_after_max_seconds\fR). A hint that would pass \fB\-\-max\-time\fR ends the run the same way.
.SS "Held stdout: \-\-hold\-stdout"
Each attempt's stdout goes through a pipe to backoff, which keeps it in an unlinked temporary file; only the stdout of the attempt that ends the run (the successful one, or the last) is written to stdout, so a consumer never sees a partial or repeated body; a run that a signal interrupts writes none of it.
.PP
Memory stays small whatever the size, but the temporary directory (\fBTMPDIR\fR, else /tmp) needs room for the whole stdout of one attempt (the file is emptied for each). When it has no room (a full disk, a quota, a file size limit), none of that attempt's stdout is written: backoff says so, and a run that would have exited 0 exits 125 (another status stays). The same holds when backoff's own stdout fails while the held output is written to it (a full disk); a reader that quits only ends the writing, as it would end the command.
.SS "Replayed stdin: \-\-replay\-stdin"
Standard input is read to its end before the first attempt, and every attempt reads it from its start, with a read\-only descriptor (a write to it fails). On Linux, up to 4 MiB is kept in a file in memory sealed against any change (\fBmemfd_create\fR(2), \fBF_SEAL_WRITE\fR and the other seals): no process can change it, root included, however it opens it anew (through \fB/proc/self/fd/0\fR). That memory is shared memory, not backoff's resident memory.
.PP
More than 4 MiB, or elsewhere than on Linux, goes to an unlinked temporary file of mode 0400, which root (or its owner, by changing its mode) can still open anew for writing: before each attempt backoff checks the file's size and times, and when an earlier attempt (or a process it left running) has changed it, that attempt is not run: backoff says that the replayed input was changed by an earlier attempt and exits 126, as for a command that cannot be run. A change made while an attempt runs is seen only before the next one.
.PP
On Linux each attempt gets a descriptor of its own, whose offset nothing else moves. A closed standard input is an empty one. The temporary directory (\fBTMPDIR\fR, else /tmp) needs room for all of a standard input larger than 4 MiB for the whole run; when it has none, backoff exits 125 before the first attempt.
.SS "Pipes and slow readers"
After the command exits, backoff reads what is left in its pipes until they close or stay silent for 0.5 s (at most 10 s while output keeps coming): a process the command left running may hold them open. What they hold when it stops reading is still passed on, however late the reader takes it. When stdout or stderr is a pipe, a reader downstream that stops reading never holds backoff's time limits or signals up: backoff stops reading the command (which then waits, as it would without backoff), and an attempt that its time limit or a signal ended waits for that reader no more: what backoff had read of it and the reader had not taken is dropped.
.PP
Held stdout (\fB\-\-hold\-stdout\fR) is written out at the end as fast as the reader takes it, with no limit of its own (a pager may stop reading for long, and still wants the rest), until \fB\-\-max\-time\fR passes (for an attempt that timed out, its time is up already: it gets what the reader takes at once): what stdout has not taken then is dropped, backoff says how many bytes (even with \fB\-q\fR) and exits 124. A terminating signal ends that writing too, and backoff dies by it.
.PP
This holds for a pipe, a FIFO, a socket and a terminal: on Linux backoff writes a pipe, a FIFO or a terminal through a description of its own whose writes do not wait, elsewhere it waits with \fBpoll\fR(2) for room and writes at most PIPE_BUF bytes at once, and a socket it writes with MSG_DONTWAIT. A file is written with ordinary blocking writes. backoff's own lines on a stderr pipe wait at most 2 s for a reader that does not read; a line not taken by then is dropped, and the next ones do not wait until one is taken again.
.PP
When stdout and stderr are the same file, pipe or terminal (\fB2>&1\fR), the command gets one pipe for both, so that their order stays exact; apart, each keeps its own order. A destination that fails (a full disk, an I/O error) is told once, and the rest of that attempt's output on that stream is dropped (the command cannot be given the error, and runs on); a reader that went away gives the command the SIGPIPE it would have had.
"#;

pub(super) const PRESETS: &str = r#".SH PRESETS
A command whose program is curl, wget or git (its file name, however it is given: \fBcurl\fR, \fB/usr/bin/curl\fR, \fB./curl\fR) runs under that preset without \fB\-\-preset\fR; \fB\-\-preset\fR \fINAME\fR chooses another, and \fB\-\-preset none\fR none at all. \fB\-v\fR says which preset applies and where it came from (\fBpreset curl (from the program's name; \-\-preset none turns it off)\fR), and what it added to the command's arguments; the JSON event \fBstart\fR and the run report carry \fBpreset\fR and \fBpreset_from\fR (\fBprogram\fR or \fBoption\fR). A preset reads the command's output through pipes, so a program that draws a progress meter only on a terminal draws none (git's \fB\-\-progress\fR draws it anyway), and wget's shows dots.
.PP
\fB\-\-preset curl\fR gives curl HTTP retry semantics. Use curl with \fB\-f\fR (\fB\-\-fail\fR) and \fB\-S\fR. When curl shows no headers (no \fB\-D\fR, \fB\-i\fR or \fB\-v\fR), the preset adds \fB\-\-dump\-header\fR \fIFILE\fR to its arguments, \fIFILE\fR being a file of backoff's own in the temporary directory (removed when backoff ends, but for SIGKILL), and reads it after each attempt, so that \fBRetry\-After\fR, rate limits and statuses are honoured while your stdout and stderr stay as they were: all of it, a piece at a time (curl takes up to 300 KB of headers a response, and \fB\-L\fR adds a response for each redirect), and the headers come from that file alone, never from what curl prints; without \fB\-f\fR an HTTP error exits 0 and cannot be retried, and backoff says so once (not with \fB\-q\fR). When the command is curl itself, the preset reads curl's arguments (for the two rules below about the body and about requests not to repeat); given to another program (a shell, a script), it cannot, and backoff says so at the start. Its rules, after your own \fB\-\-stop\-on\fR, \fB\-\-success\-on\fR and \fB\-\-retry\-on\fR:
.IP \(bu 2
exit 0: success;
.IP \(bu 2
exit 5, 6, 7, 16, 18, 28, 35, 52, 55, 56, 92, 95 (proxy, resolve, connect, HTTP/2, partial file, timeout, TLS connect, empty reply, send, receive, HTTP/2 stream, HTTP/3 failures): retry;
.IP \(bu 2
exit 22 (an HTTP error with \fB\-\-fail\fR): the status from curl's "The requested URL returned error: NNN" line or from the last HTTP status line decides: 408, 425, 429 and 5xx are retried, and so is a 403 whose headers say no request is left (\fBX\-RateLimit\-Remaining: 0\fR, as GitHub's API answers a rate limit), at the reset; every other 4xx stops the run; with no visible status, exit 22 is retried;
.IP \(bu 2
any other exit code: stop (a malformed URL, a certificate problem, a write error do not heal);
.IP \(bu 2
\fB\-\-retry\-after\fR is on;
.IP \(bu 2
when curl writes the body to stdout (no \fB\-o\fR \fIFILE\fR, \fB\-O\fR, \fB\-\-remote\-name*\fR), stdout is held as with \fB\-\-hold\-stdout\fR, so that it carries exactly one complete body, the last attempt's, and never a body cut mid\-transfer followed by another; \fB\-\-stream\-stdout\fR passes each attempt's stdout on as it comes instead;
.IP \(bu 2
a request that must not be repeated blindly, a POST or PATCH (\fB\-X\fR/\fB\-\-request\fR, or implied by \fB\-d\fR, \fB\-\-data*\fR, \fB\-\-json\fR, \fB\-F\fR, \fB\-\-form*\fR, unless \fB\-G\fR/\fB\-\-get\fR puts the data in the URL of a GET) without an \fBIdempotency\-Key\fR header, is retried only after a failure where it surely was not processed: curl exits 5, 6, 7 or 35 (no proxy, no host, no connection, no TLS handshake), or HTTP 425, 429 or 503 (and a rate limit's 403). After an ambiguous one (a timeout, an empty reply, a reset, a send or receive failure, HTTP 500, 502, 504, exit 22 with no visible status, or backoff's own \fB\-\-timeout\fR) the run stops, saying why; \fB\-\-idempotent\fR lifts the guard. The arguments are read as curl reads them in their usual forms (\fB\-XPOST\fR, \fB\-sSd\fR \fIDATA\fR, \fB\-\-request=PATCH\fR), not from a config file (\fB\-K\fR).
.PP
Death by a signal and timeouts follow the default rules, but for the guard of a request not to repeat.
.PP
\fB\-\-preset wget\fR does the same for wget. It gives wget \fB\-\-tries=1\fR before its own arguments, unless they give a number of tries (\fB\-t\fR, \fB\-\-tries\fR, \fB\-e tries=\fR\fIN\fR): wget otherwise tries 20 times by itself, with waits up to 10 s, inside each of backoff's attempts (on the command line it wins over a wgetrc's \fBtries\fR). Use it with \fB\-S\fR (\fB\-\-server\-response\fR) to let backoff see \fBRetry\-After\fR and rate limits. Its rules:
.IP \(bu 2
exit 0: success;
.IP \(bu 2
exit 4 (a network failure) and 7 (a protocol error): retry;
.IP \(bu 2
exit 8 (the server answered with an error): the status from wget's "ERROR NNN:" line or from the status line \fB\-S\fR shows decides: 408, 425, 429 and 5xx (and a rate limit's 403) are retried, every other 4xx stops the run; with no visible status, exit 8 is retried;
.IP \(bu 2
any other exit code: stop (1 a generic error, 2 a bad option, 3 a file error, 5 a certificate failure, 6 an authentication failure);
.IP \(bu 2
\fB\-\-retry\-after\fR is on.
.PP
\fB\-\-preset git\fR reads what git says when it fails (set \fBGIT_TERMINAL_PROMPT=0\fR so that git asks nobody for a password). Its rules, for a failing exit:
.IP \(bu 2
words of a failure that does not heal stop the run: "repository ... not found", "does not appear to be a git repository", "repository not exported", "Authentication failed", "Permission denied", "CONFLICT (", "Automatic merge failed", "not a git repository", "couldn't find remote ref";
.IP \(bu 2
an HTTP error from a smart\-HTTP server ("The requested URL returned error: NNN") goes by its status, as for curl: 408, 425, 429 and 5xx are retried, other 4xx stop;
.IP \(bu 2
words of a failure that may heal are retried: "Could not resolve host", "Connection refused", "Connection timed out", "timed out", "RPC failed", "early EOF", "the remote end hung up unexpectedly", "Connection reset", "Temporary failure in name resolution", "Could not read from remote repository";
.IP \(bu 2
any other failure: stop.
.PP
The git preset reads what git prints, not its arguments, so it works as well through a shell or a script.
.PP
backoff reads the command line of curl and wget only, not \fB~/.curlrc\fR, a \fB\-K\fR file, \fB~/.wgetrc\fR, \fB/etc/wgetrc\fR nor \fB$WGETRC\fR: give on the command line what backoff should know.
.SS "Said at the start"
When a protection cannot apply to the command at hand, backoff says so once, at the start of the run (not with \fB\-q\fR; in JSON, a \fBwarning\fR event; under \fB\-\-log\-format github\fR, a \fB::warning\fR annotation), with what is lost and the fix:
.IP \(bu 2
a preset given (\fB\-\-preset curl\fR or \fB\-\-preset wget\fR) for a command whose arguments it cannot read, such as \fBsh \-c 'curl ...'\fR or a script: its rules on exit codes and HTTP statuses still apply, but the curl preset cannot guard a POST, read the headers curl prints only when asked, nor hold the body, and the wget preset cannot turn wget's own retries off; run the program directly (\fBbackoff \-\- curl ...\fR); given for another preset's program (\fB\-\-preset wget \-\- curl ...\fR), it is said to be the wrong one;
.IP \(bu 2
\fB\-\-retry\-after\fR, or a preset, with curl or wget printing no header line where backoff reads it: curl without \fB\-i\fR, \fB\-v\fR or \fB\-D\fR (with the curl preset, only when \fB\-D\fR sends the headers to a file; \fB\-\-trace\fR prints them behind offsets, which is no header line), wget without \fB\-S\fR or \fB\-d\fR (not under the wget preset the program's name chose, unless \fB\-\-retry\-after\fR asks for the hint). A \fB\-\-retry\-after\-pattern\fR may find its value anywhere, and another program may print headers: nothing is said of them;
.IP \(bu 2
the command's own retries inside backoff's, with their product: curl's \fB\-\-retry\fR \fIN\fR (with \fB\-\-retry\-all\-errors\fR or \fB\-\-retry\-connrefused\fR, which do nothing without it), wget's number of tries (its default of 20 when the wget preset does not apply; \fB0\fR or \fBinf\fR is no limit), with \fB\-\-retry\-connrefused\fR or \fB\-\-retry\-on\-http\-error\fR: \fBcurl's own retries run inside backoff's: up to 16 requests: 4 attempts \(mu curl's 4 (\-\-retry 3); drop \-\-retry, or make backoff's \-\-attempts 1\fR (the fix names backoff's limit as given; under \fB\-\-until\-failure\fR, which retries no failure, nothing is said);
.IP \(bu 2
a command that hides what its preset reads: curl without \fB\-f\fR (an HTTP error exits 0, and is not retried; add \fB\-f\fR), and wget with \fB\-q\fR and without \fB\-S\fR (it prints no status and exits 8 for a 404 as for a 503, so a 404 is retried; use \fB\-nv\fR instead of \fB\-q\fR).
.PP
A run of one attempt retries nothing, and is told none of these.
"#;

pub(super) const REPORTING: &str = r#".SH "REPORTS AND METRICS"
Everything backoff says goes to stderr, one line per write. By default: one line per failed attempt and one when it gives up. \fB\-q\fR keeps only backoff's own errors; \fB\-v\fR adds the command line and its preset, each delay's bound and the success line. Reports name the program, never its arguments (they may hold secrets), unless \fB\-v\fR; \fB\-\-name\fR labels every line. \fB\-\-timestamps\fR starts every text line with the local time, RFC 3339 with milliseconds and the zone's offset (\fB+00:00\fR in UTC, not \fBZ\fR; any clock value is shown, a year outside 0000 to 9999 with its sign and all its digits, as ISO 8601's expanded years, and so are the times of JSON events and the run report), before the label: \fBbackoff: 2026\-12\-01T17:03:22.783+01:00 sync: attempt 2/7 failed (exit 22) ...\fR; GitHub annotations carry both too. Only lines about a bad command line, written before backoff knows its options, have neither. JSON events keep their own \fBtime\fR.
.PP
When stderr is a terminal (not with \fB\-q\fR, \fB\-\-log\-format json\fR or \fBTERM=dumb\fR), a delay of a second or more also shows a status line that counts the time left down in whole seconds, rewritten in place, that names what it waits for: \fBbackoff: next attempt 3/7 in 9s\fR. It is cleared before the next attempt and before any other line backoff writes, and is cut three columns short of the terminal's width so that it never wraps; when the terminal's size changes (SIGWINCH), it is drawn again at once, and every row the old line spans after the terminal rewrapped it is cleared. It is drawn only while backoff is in the terminal's foreground process group: a backoff started in the background of an interactive shell (\fBbackoff ... &\fR) never draws over the prompt. It is never written to a pipe or a file.
.SS "JSON events: \-\-log\-format json"
One JSON object per line and event, schema version 1. Every object has \fBschema\fR (1), \fBtime\fR (RFC 3339, UTC), \fBname\fR (the label) and \fBevent\fR, one of these:
.TP
\fBstart\fR
\fBprogram\fR, \fBmax_attempts\fR, \fBpreset\fR and \fBpreset_from\fR (program or option; null without a preset), and \fBargv\fR with \fB\-v\fR.
.TP
\fBattempt_start\fR
\fBattempt\fR, \fBmax_attempts\fR.
.TP
\fBattempt_end\fR
\fBattempt\fR, \fBoutcome\fR, \fBduration_seconds\fR, \fBnext\fR: retry, exhausted, stopped, deadline, hint_too_long, failure_found (\fB\-\-until\-failure\fR) or again (after a success that does not end the run, with \fBpassed\fR true, \fBstreak\fR and \fBneeded\fR); with retry also \fBdelay_seconds\fR, \fBbound_seconds\fR and \fBdelay_from_server\fR; with stopped also \fBstop_reason\fR (stop_on, never_retried, not_in_retry_on, no_retry_output_match, stop_if_output, preset, http_status, not_idempotent, cannot_start); \fBhint_seconds\fR and \fBhint_source\fR (retry\-after, pattern or rate\-limit) when the output gave a server's hint, used or not; \fBerror\fR when the command could not start.
.TP
\fBsuccess\fR
\fBattempt\fR, \fBoutcome\fR, \fBduration_seconds\fR, \fBtotal_seconds\fR, \fBstreak\fR, \fBcondition_met\fR.
.TP
\fBgive_up\fR
\fBattempts\fR, \fBoutcome\fR, \fBreason\fR, \fBtotal_seconds\fR, and \fBstreak\fR and \fBneeded\fR when a \fB\-\-consecutive\fR streak was not complete; \fBattempts\fR 0 and \fBoutcome\fR null when \fB\-\-max\-time\fR passed before the first attempt could start.
.TP
\fBreset\fR
\fBattempt\fR, \fBran_seconds\fR, \fBreset_after_seconds\fR.
.TP
\fBno_failure\fR
\fBruns\fR that succeeded, \fBtotal_seconds\fR, \fBreason\fR: runs, deadline (the next run would start too late) or cut (\fB\-\-max\-time\fR cut the last run short), and the last run's \fBattempt\fR, \fBoutcome\fR and \fBduration_seconds\fR when no \fBattempt_end\fR told of it.
.TP
\fBinterrupted\fR
\fBsignal\fR, \fBduring\fR: attempt, delay, budget, breaker or throttle (a decision of that store), or output while held stdout was written out.
.TP
\fBundelivered\fR
\fBbytes\fR of held stdout dropped at the time limit.
.TP
\fBoutput_lost\fR
\fBerror\fR: held stdout that could not be held or written.
.TP
\fBwarning\fR
\fBmessage\fR: what backoff's own line would have said, without "backoff: ": a protection that cannot apply to the command (see PRESETS), a store that cannot be used, a corrupt state, a file that cannot be written, an error after the options were read.
.PP
A command that cannot start ends the stream with \fBgive_up\fR (reason stopped), as any other end does. Only errors in the options themselves (exit 125, before the log format is known) are plain "backoff: ..." lines.
.PP
An \fBoutcome\fR is {"kind":"exit","code":N}, {"kind":"unmet","code":0} (or with \fBsignal\fR and \fBnumber\fR, when a signal counts as success), {"kind":"signal","signal":"TERM","number":15}, {"kind":"timeout","limit":"time"} (or "idle", for \fB\-\-idle\-timeout\fR), {"kind":"not_found"}, {"kind":"cannot_run"} or {"kind":"backoff_error","error":"..."} (backoff itself could not start the command).
 New fields may appear in version 1; a changed meaning bumps the version.
.SS "CI formats: \-\-log\-format github, gitlab"
.TP
\fB\-\-log\-format github\fR
Text, with \fB::warning title=NAME::\fR on each retry and \fB::error title=NAME::\fR when giving up, which GitHub Actions shows on the run's page (\fINAME\fR is \fB\-\-name\fR, else \fBbackoff\fR), and each attempt in a fold (see CI LOGS). Chosen by default when \fBGITHUB_ACTIONS\fR is \fBtrue\fR.
.TP
\fB\-\-log\-format gitlab\fR
Text, with each attempt in a collapsed section of the GitLab CI job log and a table of the attempts at the end (see CI LOGS). Chosen by default when \fBGITLAB_CI\fR is \fBtrue\fR (and \fBGITHUB_ACTIONS\fR is not).
.SS "Run report: \-\-report"
\fB\-\-report\fR \fIFILE\fR writes at exit, on every path (success, exhausted, stopped, deadline, interrupted by a signal), a JSON document: \fBschema\fR (1), \fBname\fR, \fBpreset\fR and \fBpreset_from\fR (as in the \fBstart\fR event), \fBstart\fR, \fBend\fR, \fBduration_seconds\fR, \fBattempts\fR (each with \fBattempt\fR, \fBstart\fR, \fBduration_seconds\fR, \fBoutcome\fR, \fBdelay_after_seconds\fR, and \fBhint_seconds\fR and \fBhint_source\fR, null without a server's hint; the first 100 attempts and the last 100, so that what a \fB\-\-forever\fR or \fB\-\-until\-failure\fR run keeps does not grow with its attempts), and \fBattempts_omitted\fR (the attempts between them, not listed; the counts below count every attempt).
.PP
Then \fBretry_count\fR (attempts that followed a failure), \fBsuccess_count\fR (attempts that succeeded), \fBreset_count\fR (\fB\-\-reset\-after\fR resets), \fBhooks\fR (the first 100 and the last 100 hooks that ran) and \fBhooks_omitted\fR, \fBbackoff_seconds\fR (time slept between attempts; a delay cut short counts for what was slept), \fBfinal_status\fR (backoff's exit status, 128+N for signal N), \fBfinal_signal\fR, \fBreason\fR: success, exhausted, stopped, deadline, budget, failure_found, interrupted, breaker_open (the circuit breaker did not let the command run) or breaker_unavailable (its store could not be used, with \fB\-\-budget\-store\-fail closed\fR), \fBbreaker\fR (with \fB\-\-breaker\fR: \fBkey\fR, \fBdecision\fR, \fBstate_before\fR, \fBstate_after\fR, \fBfailures_after\fR, \fBrun\fR), and \fBundelivered_bytes\fR (held stdout dropped at \fB\-\-max\-time\fR, which makes the reason deadline).
.SS "Metrics: \-\-metrics\-file"
\fB\-\-metrics\-file\fR \fIFILE\fR writes at exit Prometheus text exposition for the node exporter's textfile collector, every sample labelled \fBname\fR: gauges of the last run (\fBbackoff_last_attempts\fR, \fBbackoff_last_retries\fR, \fBbackoff_last_successes\fR, \fBbackoff_last_resets\fR, \fBbackoff_last_backoff_seconds\fR, \fBbackoff_last_exit_status\fR, \fBbackoff_last_success\fR, \fBbackoff_last_run_timestamp_seconds\fR) and counters carried over from the file's previous content (\fBbackoff_runs_total\fR, \fBbackoff_attempts_total\fR, \fBbackoff_retries_total\fR, \fBbackoff_backoff_seconds_total\fR, and \fBbackoff_attempt_outcomes_total\fR with a second label \fBoutcome\fR: success, exit, signal, timeout, idle_timeout, unmet, cannot_start or backoff_error).
.PP
Each \fB\-\-name\fR has its own series: a run replaces those of its name, adding its counts to their counters, and keeps every other sample of the file, of other names or of other metrics (other exporters' included), each metric's samples together under one HELP and one TYPE line; a line of the previous file that is not valid exposition text (or a second TYPE, HELP or sample of the same series) is dropped, so the file always parses.
.PP
The file is updated under an exclusive lock on it (\fBflock\fR(2)): read, written anew, renamed over, then unlocked, so runs that end at once, of one name or of several, add up exactly. A wait for the lock ends when one process has held it for 5 s, or at a terminating signal; the update is then given up and reported, and after a signal backoff dies by it (\fB\-\-report\fR has been written before).
.SS "Both files"
Both files are written atomically (a temporary file in the same directory, renamed over the old one), with mode 0644; their directory must exist when backoff starts. Only a regular file is ever replaced: a FIFO, a device, a socket, a directory or a symbolic link at \fIFILE\fR is refused with exit 125 before anything runs, and one that has appeared there by the end of the run is left as it is and reported.
.PP
\fIFILE\fR is opened without following a symbolic link and without waiting (a FIFO never holds backoff up), and at most 1 MiB of a previous metrics file is read: a larger one is not backoff's and is left alone. \fB/dev/stdout\fR and \fB/dev/stderr\fR name backoff's own streams, which are written to as they are (the counters of \fB\-\-metrics\-file\fR then count this run alone; with \fB\-\-log\-format json\fR, \fB\-\-report /dev/stderr\fR is one line, as each event is); a reader of that stream who does not take it within 2 s does not hold backoff up: it is dropped and reported. A file that cannot be written is reported on stderr and does not change the exit status.
"#;

pub(super) const CI_LOGS: &str = r#".SH "CI LOGS"
In the \fBgithub\fR and \fBgitlab\fR formats each attempt's output is folded in the log: the fold opens when the attempt starts and closes as it ends, just before the line that tells how, so that the retries, the annotations and the end stay outside the folds. The markers go to stderr, as backoff's other lines do (the runners read them on both streams); there are none with \fB\-q\fR or in the \fBjson\fR format. In these formats the attempt's stderr goes through backoff (as output rules make it), so that a last line it leaves without a newline is ended before the marker that closes the fold, which would otherwise be glued to it and never close the fold; with \fB2>&1\fR, stdout goes through with it, in the command's order. A terminal is left to the command, stdout and stderr both (its colours and progress bars stay), and a marker there may follow a line left unfinished: a person reads a terminal, not a CI runner. GitHub Actions: \fB::group::attempt 2/7\fR (\fBattempt 2\fR without a fixed number of attempts; with \fB\-\-name\fR and \fB\-\-timestamps\fR, their labels first) and \fB::endgroup::\fR. GitLab CI: \fB\(rse[0Ksection_start:\fR\fITIME\fR\fB:backoff_\fR\fIPID\fR\fB_attempt_\fR\fIN\fR\fB[collapsed=true]\(rsr\(rse[0Kbackoff: attempt 2/7\fR and \fB\(rse[0Ksection_end:\fR\fITIME\fR\fB:backoff_\fR\fIPID\fR\fB_attempt_\fR\fIN\fR\fB\(rsr\(rse[0K\fR, \fITIME\fR in Unix seconds, the pid keeping two runs in one job apart; after the run, the attempts' table (attempt, outcome, duration, delay after) as aligned \fBbackoff: \fR lines, not with \fB\-q\fR; past 200 attempts, the first 100 and the last 100, with a row that says how many were left out.
.PP
Under GitHub Actions (\fBGITHUB_ACTIONS\fR is \fBtrue\fR), whatever the format and \fB\-q\fR included, backoff appends to the step's files when their variables name them: to \fB$GITHUB_OUTPUT\fR the outputs \fBattempts\fR, \fBretries\fR, \fBexit_code\fR (its exit status as a shell sees it), \fBoutcome\fR (\fBsuccess\fR, \fBfailure\fR, \fBcancelled\fR when a signal ended the run, or \fBskipped\fR when an open \fB\-\-breaker\fR circuit did not let the command run) and \fBreason\fR (as the run report's); to \fB$GITHUB_STEP_SUMMARY\fR a Markdown heading \fB### backoff: \fR\fINAME\fR (\fB\-\-name\fR, else the program), how the run ended in the words of its last line, and a table of the attempts: outcome (\fBsuccess\fR, \fBexit 1\fR, \fBsignal TERM\fR, \fBtimeout\fR, ...), duration and the delay after it; past 200 attempts, the first 100 and the last 100, with a row that says how many were left out, so that the summary stays under 64 KiB (GitHub takes up to 1 MiB). Each output is written as \fINAME\fR\fB<<\fR\fIDELIMITER\fR, its value and the delimiter, with a random delimiter, and starts on a line of its own; a \fINAME\fR\fB<<\fR\fIEOF\fR value the command left open (an attempt killed while writing) is first closed with its delimiter, and a name left without \fB=\fR gets \fB=\fR (an empty value, not a line that fails the file); the whole file is read as the runner on Linux and macOS reads it (a \fB\\r\fR before a newline is part of the line), a piece at a time (a \fINAME\fR\fB<<\fR line over 64 KiB long is not followed: only a newline is added where the last line is unfinished). Each is one write, appended without following a symbolic link and only to a regular file (a FIFO is not waited for): anything else is left alone, with \fBcannot write $GITHUB_OUTPUT '\fR\fIPATH\fR\fB': not a regular file\fR. A file that cannot be written is one line on stderr and never changes the exit status.
.PP
\fBaction.yml\fR in the source makes backoff a composite GitHub action: it installs backoff from its own checkout with \fBcargo install\fR and runs its \fBrun\fR input with \fBbash \-eo pipefail \-c\fR under backoff, with the inputs \fBattempts\fR, \fBmax\-time\fR, \fBtimeout\fR, \fBbase\fR, \fBcap\fR, \fBjitter\fR, \fBretry\-on\fR, \fBname\fR and \fBargs\fR (more options, split on whitespace), and the five outputs above.
"#;

pub(super) const BUDGET: &str = r#".SH "RETRY BUDGET"
Jitter spreads retries in time; a budget bounds how many there are. Every backoff process started with the same \fB\-\-budget\fR \fIKEY\fR shares one token bucket: it holds at most \fB\-\-budget\-burst\fR tokens (default 10) and starts full; each retry takes one token; each success deposits \fB\-\-budget\-ratio\fR of a token (default 0.1). With less than one token left, backoff does not retry: it gives up with the last attempt's status and says "retry budget exhausted" (reason \fBbudget\fR in reports). First attempts are never blocked. Tokens are counted in millionths, so concurrent processes never lose or create one.
.PP
The state of a key is one small file, \fIKEY\fR\fB.budget\fR, in \fB\-\-budget\-dir\fR (default \fB$XDG_STATE_HOME/backoff\fR, else \fB~/.local/state/backoff\fR; a relative \fBXDG_STATE_HOME\fR is ignored), created with mode 0700. The default is the same for a user's cron jobs and login sessions, and in the user's home, where no other user can create it first. Without \fBHOME\fR and \fBXDG_STATE_HOME\fR there is no default directory: a run says so once and \fB\-\-budget\-store\-fail\fR decides; \fBbackoff budget\fR needs \fB\-\-budget\-dir\fR then. The state file is updated under an exclusive lock that the kernel releases when its holder dies, even by SIGKILL, and rewritten in one write of a fixed size; nothing is opened before a budget is used. The lock is waited for at most \fB\-\-budget\-store\-timeout\fR, and a terminating signal ends the wait at once. A directory or file that is a symbolic link (neither is ever followed), belongs to another user, or is writable by others is never used and never stops the command: it is reported once, and \fB\-\-budget\-store\-fail\fR decides, as for an unreachable store. The file records the level and the burst and ratio of the run that last changed it, in one line of 106 bytes (a record of 52 bytes, the level alone, as older versions of backoff wrote it, is still read, and rewritten at the next change); at most a record's size of a state file is read; a file that does not hold a valid state (corrupt, truncated, too long) is reported once and replaced by a full bucket, or, with \fB\-\-budget\-store\-fail closed\fR, left untouched and not used. \fBbackoff budget reset\fR repairs it (but never replaces a symbolic link, a special file or another user's file); \fBbackoff budget show\fR creates nothing, and reports a corrupt file. A key is 1 to 128 letters, digits, '.', '_' or '\-', not starting with '.'.
.PP
A file is shared by the processes of one machine. For a fleet, \fB\-\-budget\-store redis://\fR[\fIuser\fR:\fIpassword\fR@]\fIhost\fR[:\fIport\fR][/\fIdb\fR] keeps the same bucket in Redis 5 or later (or Valkey), under the key \fBbackoff:budget:\fR\fIKEY\fR, a hash of the fields \fBlevel\fR, \fBburst\fR and \fBratio\fR (a string of digits, the level alone, as older versions wrote it, is read and becomes a hash at the next change; those versions report such a hash as a store error and follow \fB\-\-budget\-store\-fail\fR); every update is one Lua script that the server runs atomically, and a key idle for 7 days expires. A key that does not hold a valid state (a burst below 1 token or above a million, a ratio or a level above the burst, a field too many or missing) is handled as a corrupt file is: reported once and replaced by a full bucket, or left alone with \fB\-\-budget\-store\-fail closed\fR; \fBbackoff budget reset\fR replaces any value. backoff connects only when a retry asks for a token, so a first attempt never waits for the store. Every store call (connecting, writing, reading, all together) ends within \fB\-\-budget\-store\-timeout\fR (250ms), a slow name lookup included, and a terminating signal ends it at once (before a retry, backoff then dies by the signal, as during a delay; after a success, the run still exits 0); a store that cannot be reached or does not answer in time is reported once ("timed out" when it did not answer); then \fB\-\-budget\-store\-fail open\fR (the default) retries under the local policy alone and \fBclosed\fR does not retry. A decision backoff gave up waiting for changes nothing later: each call carries its expiry on the server's clock (read once per connection, and again after a minute), a tenth of the timeout before backoff stops waiting, and a server that reads it after that (frozen, then thawed) takes no token and records nothing; this assumes the server's clock does not step back meanwhile. A state file's lock waited for past the timeout is given up too, and nothing is taken later. \fB\-\-max\-time\fR is checked again after each decision: when it passed meanwhile, no attempt starts and backoff gives up with the last attempt's status. A password in the URL is never shown, in any form (as written, percent\-decoded, or as the \fBpass\fR parameter of a \fBredis+unix://\fR URL): reports print it as ***; a '/' in a password is written %2F; \fBBACKOFF_BUDGET_STORE\fR keeps it out of process lists. \fBrediss://\fR speaks TLS, trusting the system's certificates or those of the file named by \fBSSL_CERT_FILE\fR. \fBredis+cluster://\fR[\fIuser\fR:\fIpassword\fR@]\fIhost\fR:\fIport\fR[,\fIhost\fR:\fIport\fR...] (\fBrediss+cluster://\fR for TLS) names nodes of a Redis Cluster: each decision goes to the node that serves its key's slot, still one script on one key; a slot being moved (\fBredis\-cli \-\-cluster reshard\fR) is followed within the timeout: ASK (the key is at the importing node: ASKING there, then the script) and MOVED (the script at the node named, and a fresh slot map for the next decision), which the server answers without running the script, so no decision is applied twice; nothing else is tried again. A node that is down, or a cluster that says CLUSTERDOWN, follows \fB\-\-budget\-store\-fail\fR as an unreachable server does. A cluster has only database 0. A build without the \fBredis\fR cargo feature refuses \fB\-\-budget\-store\fR.
.PP
\fBbackoff budget show\fR \fIKEY\fR prints a bucket's tokens, and the burst and ratio its state records (\fBapi: 2.1 of 3 tokens, 0.1 a success (\fR\fIstore\fR\fB)\fR; with \fB\-\-format json\fR, one object with \fBkey\fR, \fBtokens\fR, \fBmicro_tokens\fR, \fBburst\fR, \fBratio\fR, \fBbucket_from\fR and \fBstore\fR); where the state records none (no state yet, or one of an older version), those of \fB\-\-budget\-burst\fR and \fB\-\-budget\-ratio\fR, and it says so (\fBbucket_from\fR is \fBoptions\fR rather than \fBstate\fR). \fBbackoff budget reset\fR \fIKEY\fR fills it again, to the burst its state records, or with \fB\-\-budget\-burst\fR or \fB\-\-budget\-ratio\fR to those given, which it records, and says what it held (\fBbackoff: budget 'api' reset to 10 tokens; it held 3.2\fR on stderr; with \fB\-\-format json\fR, one object on stdout with \fBkey\fR, \fBstore\fR, \fBfound\fR (\fBnothing\fR, \fBstate\fR or \fBcorrupt\fR), \fBbefore\fR and \fBafter\fR); a budget without a state is full, and a reset that finds none writes nothing. Both take \fB\-\-budget\-dir\fR or \fB\-\-budget\-store\fR, \fB\-\-budget\-burst\fR and \fB\-\-budget\-ratio\fR.
"#;

pub(super) const BREAKER: &str = r#".SH "CIRCUIT BREAKER"
Every backoff process started with the same \fB\-\-breaker\fR \fIKEY\fR shares one circuit, kept in the store of the budgets: the file \fIKEY\fR\fB.breaker\fR in \fB\-\-budget\-dir\fR (with the same checks, lock and fixed\-size records as a budget file), or the Redis key \fBbackoff:breaker:\fR\fIKEY\fR with \fB\-\-budget\-store\fR (one Lua script per decision, run atomically on the server's clock; the key expires 7 days after the circuit would reopen).
.TP
\fBclosed\fR
Runs go ahead. A run that gives up (retries exhausted, stopped by a rule, \fB\-\-max\-time\fR, the budget) counts; a run that succeeds sets the count to 0; a run interrupted by a signal does not count. \fB\-\-breaker\-failures\fR \fIN\fR (5) runs in a row that gave up open the circuit.
.TP
\fBopen\fR
A run does not start the command: it says since and until when on one line, runs no hook, and exits with \fB\-\-breaker\-exit\fR (75, EX_TEMPFAIL). It stays open \fB\-\-breaker\-cooldown\fR (5m).
.TP
\fBhalf\-open\fR
The first run to ask is the probe: the store records its claim atomically, and it runs the command without retries (its first failure ends it; with \fB\-\-consecutive\fR its successes still count toward the streak), while other runs keep skipping. Its success closes the circuit; its failure opens it again for a cooldown. A claim lasts one cooldown, so a probe that never reports (killed) lets another run probe after that, and its own end then counts as any run's (it neither closes what another probe opened nor reopens what another closed, except by its success); a probe interrupted by a signal gives its claim back at once. A run on a terminal with \fB\-\-on\-retry\fR starts the countdown line on a new line after the hook.
.PP
A store that cannot be used follows \fB\-\-budget\-store\-fail\fR: \fBopen\fR runs the command (said once), \fBclosed\fR skips the run. A corrupt state (one with a time past year 9999 included) is said once and starts closed (or, with \fBclosed\fR, skips the run); \fBbackoff breaker reset\fR \fIKEY\fR repairs it and closes the circuit, and says what it was (\fB\-\-format json\fR as for a budget). A run trusts a stored reopening, or a probe's claim, at most one \fB\-\-breaker\-cooldown\fR from its own clock (the server's, for Redis): a clock stepped back, or a host whose clock ran ahead, holds the circuit one cooldown, not as long as the step. \fBbackoff breaker show\fR \fIKEY\fR prints the state as stored, unclamped (\fB\-\-format json\fR for programs). JSON events \fBbreaker\fR (\fBdecision\fR run, probe, skip or unavailable; \fBstate\fR, \fBfailures\fR, \fBopened\fR, \fBuntil\fR) and \fBbreaker_update\fR (after the run: \fBprobe\fR, \fBrun\fR succeeded, gave_up or interrupted, and the new state); the run report's \fBbreaker\fR object and reason \fBbreaker_open\fR; the metrics \fBbackoff_breaker_state\fR (0 closed, 1 open, 2 half\-open) and \fBbackoff_breaker_skipped_total\fR. \fB\-\-breaker\fR with \fB\-\-until\-failure\fR is refused.
"#;

pub(super) const THROTTLE: &str = r#".SH "ADAPTIVE THROTTLE"
Every backoff process started with the same \fB\-\-throttle\fR \fIKEY\fR shares one adaptive throttle (client\-side throttling, as in the "Handling Overload" chapter of Google's SRE book). Over \fB\-\-throttle\-window\fR (2m, from 1s to 30d) the fleet counts its requests, every attempt it wanted to make, sent or skipped, and the attempts the backend accepted; each new attempt is skipped with probability max(0, (\fIrequests\fR \- \fIK\fR \(mu \fIaccepts\fR) / (\fIrequests\fR + 1)), where \fIK\fR is \fB\-\-throttle\-k\fR (2, from 1 to 1000, at most three decimals). While the backend accepts more than one attempt in \fIK\fR, nothing is skipped; when it accepts fewer, the fleet sends about \fIK\fR times what it accepts, and at least about one attempt a window, which sees it recover. \fB\-\-throttle\-window\fR and \fB\-\-throttle\-k\fR without \fB\-\-throttle\fR change nothing.
.PP
The window is kept as 12 slots of a twelfth of it each: a slot counts while it is the current one or one of the 11 before it. The state records the width of its slots: processes that share a key count in the state's width while any of its slots counts, and a state with no slot that counts takes the width of the process that writes it. A slot in the future (a clock stepped back) is not counted, and is replaced when its place comes round. Each count stops at 10^14.
.PP
The state of a key is the file \fIKEY\fR\fB.throttle\fR in \fB\-\-budget\-dir\fR, with the same checks, lock, timeout and fail mode as a budget file; it is one line of 1061 bytes, written in one write at its start: \fBbackoff\-throttle v1 width\fR \fIW\fR \fBslots\fR, then for each of the 12 slots, in the ring's order, its interval number (its start divided by \fIW\fR, which puts it at that number modulo 12 in the ring), requests, skips and accepts, each number 20 digits and preceded by a space. Anything else (another length, a character that is not a digit, a slot out of its place, a count past 10^14, more skips than requests, a width of 0 with a slot that is not all zeros, or above a twelfth of 30 days) is corrupt: a run says so once and starts a fresh window (or, with \fB\-\-budget\-store\-fail closed\fR, leaves it alone), and \fBbackoff throttle reset\fR \fIKEY\fR repairs it. A store that cannot be used follows \fB\-\-budget\-store\-fail\fR: \fBopen\fR sends the attempt (said once), \fBclosed\fR skips it. With \fB\-\-budget\-store\fR the window is the Redis key \fBbackoff:throttle:\fR\fIKEY\fR, each decision and each accept one Lua script on the server's clock, with the same rules and arithmetic; a run makes one connection to the store for its budget, breaker and throttle, and calls each script by its SHA\-1 (\fBEVALSHA\fR).
.PP
An accept is an attempt that succeeded, or failed in a way that is not the backend's (a stop rule, an attempt outside \fB\-\-retry\-on\fR, an HTTP status not worth retrying); a failure worth retrying, an interrupted attempt and a request not idempotent whose fate is unknown are not, and a command that could not start offsets its request as an accept. A breaker's probe is never skipped, a run whose attempts were all skipped does not count against the breaker, and \fB\-\-throttle\fR with \fB\-\-until\-failure\fR is refused. A skipped attempt runs nothing: it is a failed attempt of outcome \fBthrottled\fR (\fBBACKOFF_LAST_STATUS=throttled\fR), counts against \fB\-\-max\-retries\fR, and is retried after its delay; the retry after it takes no \fB\-\-budget\fR token. A run whose last attempt was skipped exits with the status of the last attempt that ran, or 75 when none ran. Each skip is in the JSON event \fBthrottle\fR, the outcome \fBthrottled\fR, the run report's \fBthrottle\fR, the metrics \fBbackoff_throttle_reject_probability\fR and \fBbackoff_throttled_total\fR, and the GitHub output \fBthrottled\fR.
.PP
\fBbackoff throttle show\fR \fIKEY\fR prints the counts of the window now and the probability that the next attempt is skipped under \fB\-\-throttle\-k\fR (\fBapi: 87 requests in the last 2m (11 skipped), 15 accepted; the next attempt is skipped with probability 0.648 under K 2 (\fR\fIstore\fR\fB)\fR), in the state's window while a slot of it counts, else in that of \fB\-\-throttle\-window\fR; with \fB\-\-format json\fR, one object with \fBkey\fR, \fBrequests\fR, \fBskips\fR, \fBaccepts\fR, \fBprobability\fR, \fBk\fR, \fBwindow_seconds\fR, \fBwindow_from\fR (\fBstate\fR or \fBoptions\fR) and \fBstore\fR. It creates nothing. \fBbackoff throttle reset\fR \fIKEY\fR empties the window, and says what it held (\fB\-\-format json\fR as for a budget). Both take \fB\-\-budget\-dir\fR; a corrupt or untrusted state, or a lock held past \fB\-\-budget\-store\-timeout\fR, is one line and exit 125.
"#;

pub(super) const SIMULATION: &str = r#".SH SIMULATION
\fBbackoff simulate\fR reproduces M. Brooker's "Exponential Backoff And Jitter" (AWS Architecture Blog, 2015). One row under optimistic concurrency; each of N clients reads the row's version, then writes it back, and the write succeeds only if the version has not changed since the read. Every one\-way message takes |Normal(10 ms, 2 ms)|. A client whose write failed increments its retry counter \fIn\fR (1 on the first failure), sleeps, then reads again. With \fIe\fR = min(cap, base \(mu 2^\fIn\fR) (base 5ms, cap 2s): \fBnone\fR sleeps 0; \fBexponential\fR sleeps \fIe\fR; \fBfull\fR uniform in [0, \fIe\fR); \fBequal\fR \fIe\fR/2 + uniform in [0, \fIe\fR/2); \fBdecorrelated\fR min(cap, uniform in [base, 3 \(mu previous sleep)), from base, per client; \fBpolicy\fR is backoff's own policy (\fB\-\-base\fR, \fB\-\-cap\fR, \fB\-\-factor\fR, \fB\-\-jitter\fR; its first delay is bounded by base). For each client count and strategy it reports the mean and standard deviation over \fB\-\-runs\fR of the write calls the server handled (reads are not counted) and of the time the last client succeeded. It is a discrete\-event simulation (priority queue on event time, ties by insertion order), spread over the machine's cores, and deterministic with \fB\-\-seed\fR. \fB\-\-format csv\fR prints the original simulator's columns \fBclients,time,calls,Algorithm\fR (time in ms); \fB\-\-plot\fR \fIFILE\fR draws both charts into an SVG file, a line per strategy, each in a colour, dashes and marks of its own, the legend below them. This is \fB\-\-model contention\fR, the default.
.PP
\fBbackoff simulate \-\-model overload\fR shows what retries do to a server past its capacity, with backoff's own delays (its policy's \fBDelays\fR), retry budget (\fBBucket\fR), circuit breaker (\fBBreaker\fR) and adaptive throttle (\fBThrottle\fR). Time runs in ticks of 10 ms. \fB\-\-clients\fR N (1000) each make a request every 1/\fB\-\-rate\fR seconds (1/s), from a random phase; each request is one run of backoff. Every attempt goes to one server with a FIFO queue of at most \fB\-\-queue\fR attempts (1000); an attempt that finds the queue full fails at once. Each second the server takes \fB\-\-capacity\fR attempts (2000) from the front of its queue and works on each of them, even on one whose client has already given up on it: a client waits \fB\-\-timeout\fR (1s) for an answer, then counts the attempt as failed, and an attempt served in time succeeds. From \fB\-\-outage\-start\fR (10s) for \fB\-\-outage\-length\fR (10s) the capacity is \fB\-\-brownout\fR \fIF\fR of itself (0: a full outage, to 1); the run ends at \fB\-\-horizon\fR (60s). A failed attempt is retried, at most \fB\-\-max\-retries\fR times (3), after the strategy's delay, on the first tick after it (at least the next tick), with \fB\-\-base\fR (100ms), \fB\-\-cap\fR (30s) and \fB\-\-factor\fR (2): \fBnone\fR does not retry; \fBimmediate\fR retries with no delay; \fBexponential\fR, \fBfull\fR, \fBequal\fR and \fBdecorrelated\fR are backoff's jitter kinds (\fBnone\fR, \fBfull\fR, \fBequal\fR, \fBdecorrelated\fR); \fBfull+budget\fR is full jitter under one retry budget shared by all clients, as one \fB\-\-budget\fR \fIKEY\fR on every host would be (a retry takes a token, a success deposits \fB\-\-budget\-ratio\fR (0.1), at most \fB\-\-budget\-burst\fR (10) tokens, backoff's defaults, the burst not scaled to the fleet); \fBfull+breaker\fR is full jitter behind one circuit breaker shared by all clients, as one \fB\-\-breaker\fR \fIKEY\fR would be: after \fB\-\-breaker\-failures\fR (5) requests in a row that gave up it opens, and a request made while it is open is skipped (not sent: no attempt); after \fB\-\-breaker\-cooldown\fR (5s; backoff's own default is 5m) one request probes with one attempt, whose success closes it; \fBfull+throttle\fR is full jitter behind one adaptive throttle shared by all clients, as one \fB\-\-throttle\fR \fIKEY\fR would be: before every attempt, the first included, the throttle skips it with probability max(0, (requests \- K \(mu accepts) / (requests + 1)) over the last \fB\-\-throttle\-window\fR (2m) with K \fB\-\-throttle\-k\fR (2), where requests counts every attempt asked about, sent or skipped, and accepts the attempts the server answered in time (a full queue and an answer too late are the overload's failures, and the model has no other); a skipped attempt sends nothing, fails at once, and is retried after its delay like any failed attempt; \fBfull+budget+throttle\fR is behind that throttle and under that budget, where a retry takes a token only when the attempt before it reached the server (the retry of a skipped attempt takes none). Per strategy it reports \fBamplification\fR, the attempts sent during the outage divided by the requests made during it (skipped ones count as made, so the breaker's may be below 1; attempts the throttle skipped are not sent); \fBgoodput\fR, the requests that succeeded (on any attempt, before the horizon) divided by the requests made, over the whole run; \fBrecovery_s\fR (\fBrecovery_seconds\fR in CSV and JSON), the seconds from the capacity's return to the start of the first second in which at least 95% as many requests succeed as are made, when every second starting in the 5 s after it is as healthy, or \fBnever\fR within the horizon (\fBnull\fR in JSON); \fBskipped\fR, the requests the open breaker did not send; \fBthrottled\fR, the attempts the throttle did not send; and \fBwasted\fR, the attempts the server worked on after their client had given up. The arrivals are the same for every strategy, and everything is deterministic with \fB\-\-seed\fR. \fB\-\-format\fR \fBtable\fR, \fBcsv\fR (columns \fBstrategy,amplification,goodput,recovery_seconds,skipped,throttled,wasted,requests,attempts,succeeded\fR), \fBjson\fR (also each second's offered load and goodput) or \fBsvg\fR (to stdout; \fB\-\-plot\fR \fIFILE\fR writes the same chart): a row of two small charts per strategy, offered load (attempts sent a second) and goodput (requests that succeeded a second) against time, each column on one scale, the outage shaded.
.PP
The wasted work is what makes an overload metastable: once the queue holds more than the server works through within the timeout, every attempt it serves is stale, every attempt fails, and with retries the clients send up to 1 + \fB\-\-max\-retries\fR times their requests, which keeps the queue full after the capacity has returned. \fB\-\-scenario metastable\fR sets \fB\-\-queue\fR to 4000 (two seconds of work against a one\-second timeout), the other values as above (\fB\-\-scenario outage\fR, the default): there \fBimmediate\fR, \fBexponential\fR, \fBfull\fR, \fBequal\fR and \fBdecorrelated\fR never recover, while \fBnone\fR, \fBfull+budget\fR, \fBfull+breaker\fR and \fBfull+budget+throttle\fR recover within seconds, and \fBfull+throttle\fR within tens of seconds: the throttle skips only once the requests of its window pass K times its accepts, and its window still counts the outage's failures after the server has recovered. Options of the other model (\fB\-\-runs\fR and \fB\-\-jitter\fR are the contention model's; \fB\-\-scenario\fR, the values above and \fB\-\-format svg\fR the overload model's) are refused.
"#;

pub(super) const EXIT_STATUS: &str = r#".SH "EXIT STATUS"
.TP
\fB0\fR
An attempt succeeded (also when a \fB\-\-success\-on\fR rule other than 0 matched).
.TP
\fIcode\fR
The last attempt's exit code, when retries ran out or a stop rule matched; with \fB\-\-until\-failure\fR, the status of the failure found.
.TP
\fB1\fR
The run ended with an \fB\-\-until\-output\fR condition unmet, or before a \fB\-\-consecutive\fR streak was complete.
.TP
\fB75\fR
With \fB\-\-breaker\fR: the circuit is open (or another run is probing it), and the command was not run; \fB\-\-breaker\-exit\fR changes this status. With \fB\-\-throttle\fR: every attempt of the run was skipped.
.TP
\fB128+\fIN\fR
backoff dies by signal \fIN\fR when the last attempt was killed by it (not by backoff), or when backoff itself was interrupted by it; a shell reports 128+\fIN\fR.
.TP
\fB124\fR
The last attempt timed out (\fB\-\-timeout\fR, or cut short by \fB\-\-max\-time\fR). With \fB\-\-preserve\-status\fR, the command's own status instead, as \fBtimeout\fR(1) does.
.TP
\fB125\fR
backoff itself failed: bad usage, a bad value (said in one line that quotes the value as it was given and says where it came from: the flag, the environment variable or the default; advice in the line, followed as written, works), an internal error (then nothing was run); the held stdout of a run that succeeded was lost (\fB\-\-hold\-stdout\fR); or backoff could not start the command for want of a resource of its own (a process slot, open files, memory) on every attempt it made. Such a failure to start is retried like a transient one, whatever the rules say (they are about the command), and reported as backoff's: \fBfailed (backoff could not start it: Too many open files)\fR.
.TP
\fB126\fR
The command exists but cannot be run; or the input replayed by \fB\-\-replay\-stdin\fR was changed by an earlier attempt, and the next attempt was not run.
.TP
\fB127\fR
The command was not found.
"#;

pub(super) const SIGNALS: &str = r#".SH SIGNALS
backoff waits for the command, for signals and for the end of a delay in one event\-driven wait; it never polls.
.TP
\fBSIGINT\fR, \fBSIGTERM\fR, \fBSIGHUP\fR, \fBSIGQUIT\fR, and every other signal that ends a process by default and can be caught
That is also SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF, SIGXCPU, on Linux SIGPOLL, SIGPWR and SIGSTKFLT, and the real\-time signals (SIGRTMIN to SIGRTMAX). Not among them: the signals of a fault of backoff's own (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT), SIGXFSZ (a write past the file size limit fails instead) and SIGPIPE (ignored: a write to a closed pipe fails instead). During a delay: the delay ends at once, no further attempt starts, and backoff dies by the same signal. During an attempt: the signal is passed on to the command's process group, followed by SIGCONT (a stopped command could not act on it, as with \fBtimeout\fR(1)), and no further attempt starts; when the command has exited, backoff exits with its status if it handled the signal and exited normally, and otherwise dies by the signal. Processes of the group still alive then are killed. A second such signal kills the command's group with SIGKILL at once. A signal that backoff inherited as ignored (\fBnohup\fR, background jobs) stays ignored.
.TP
Timeouts
When an attempt runs past \fB\-\-timeout\fR (or past the time \fB\-\-max\-time\fR leaves), its process group gets \fB\-\-signal\fR (default SIGTERM) and SIGCONT (a stopped command could not act on it), then SIGKILL after \fB\-\-kill\-after\fR (default 5s) if the command has not ended (sooner with \fB\-\-max\-time\fR and a closing hook; see HOOKS). With \fB\-\-max\-time\fR, backoff exits at the latest \fB\-\-kill\-after\fR after the deadline, the hooks that close the run included (only a circuit breaker's record of how the run ended may add its \fB\-\-budget\-store\-timeout\fR, when the last attempt took all that time). Processes of the group still alive when the command has ended are killed. With \fB\-\-foreground\fR only the command itself is signalled, so processes it started in the background may outlive the attempt. \fB\-\-idle\-timeout\fR ends an attempt the same way when it has written nothing to stdout or stderr for that long, counted from its start or its last output on either stream (output that waits for a reader who does not read counts as output); its outcome is a timeout too (\fBidle timeout\fR; JSON \fB"limit":"idle"\fR), and the limit that runs out first ends the attempt. With it, both streams go through pipes to backoff and on, unchanged (on Linux, into a pipe or a file, moved by the kernel with \fBsplice\fR(2), unread; both streams share one pipe when they go to the same file, pipe or terminal, so that their order there stays exact), so the command does not write to a terminal itself; a program that buffers its output off a terminal may look silent (use \fBpython \-u\fR or \fBstdbuf \-oL\fR).
.TP
\fBSIGKILL\fR
When backoff is killed with SIGKILL (or dies by any signal it cannot catch), the running attempt's whole process group is killed with SIGKILL too: a small process, \fBbackoff\-guard\fR, forked when backoff starts (not with \fB\-\-foreground\fR), blocks every signal it can and waits on a pipe that the kernel closes when backoff dies; it is told each attempt's group (and each hook's) by the new process itself before the command is executed, and until the attempt has been cleaned up. On Linux the command itself also gets a parent\-death signal (set before it starts and checked against a race; cleared when it executes a set\-user\-ID program). What survives: processes that left the group (\fBsetsid\fR, \fBsetpgid\fR, a daemon's double fork); processes a failed attempt left running, once that attempt has ended (they get SIGTERM before the retry, but after the attempt backoff no longer holds the group's id, which the system may give to another group); the guard itself, if it is killed first (a guard that dies while backoff runs, killed by hand or by the OOM killer, costs no attempt: backoff says so on one line and starts a new one at once (on the SIGCHLD of its death, even in the middle of an attempt), which it tells the running group; if none can start, it says so and goes on without); and with \fB\-\-foreground\fR everything but the command. The guard counts as one process against the user's limit on processes (\fBulimit \-u\fR); when it cannot be started, backoff says so once and runs the command without it. Until backoff has cleaned up after an attempt (killed what is left of a group it ended, told the guard), it does not reap the command, so the group's id cannot pass to another group meanwhile.
.TP
\fBSIGTSTP\fR, \fBSIGCONT\fR
Passed on to the command's group, and backoff stops and continues with it, so job control works.
.TP
\fBSIGTTIN\fR, \fBSIGTTOU\fR
A command in a process group of its own that reads the terminal (or writes to it with \fBstty tostop\fR) is stopped by the system, as any background job is. backoff says so at once, on one line even with \fB\-q\fR, naming \fB\-\-foreground\fR, which keeps the command in backoff's group and so gives it the terminal; Ctrl\-C or \fBkill\fR then ends it as usual.
.PP
"Dies by the signal" means that backoff restores the signal's default action and raises it, so that a calling shell sees a signal death (130 for SIGINT, 143 for SIGTERM) and a shell loop stops on Ctrl\-C. No core file is written.
.PP
As PID 1 of a container or PID namespace (an entrypoint without an init, \fBunshare \-\-pid \-\-fork\fR), backoff is what \fBtini\fR or \fBdocker \-\-init\fR would be: it reaps every orphan the system hands it (the processes a command's double fork leaves), whenever one ends, without taking the status of its own attempts, hooks or guard; and it needs no init in front of it for signals, since it has a handler for each one it acts on (the system gives PID 1 no signal it has no handler for): \fBkill 1\fR stops it as \fBkill\fR stops it elsewhere, and is passed on in the same way. A PID 1 cannot die by a signal: where backoff would, it exits with 128 + N (143 for SIGTERM). It does not make itself a subreaper elsewhere: orphans go to PID 1 as usual.
.PP
In GitHub Actions and similar runners, a cancelled step sends SIGINT to the step's shell only; start backoff with \fBexec backoff ...\fR so that it receives the signal itself.
"#;

pub(super) const PROCESSES: &str = r#".SH "RUNNING THE COMMAND"
The command is executed directly (PATH lookup, no shell) with its arguments as raw bytes; a file in no executable format is not handed to a shell, as \fBexecvp\fR(3) would, but fails with 126 (a script with no \fB#!\fR line is told to make \fB#!/bin/sh\fR its first line). It runs in its own process group, so that a signal reaches every process it started; \fB\-\-foreground\fR keeps it in backoff's group for programs that read the terminal (a program in another group is stopped by SIGTTIN when it reads the terminal), and then only the command itself is signalled. The command starts with default signal actions (except those inherited as ignored) and an empty signal mask. Its standard input, output and error are backoff's own, with no copy and no buffering, unless an option of OUTPUT, INPUT AND SERVERS needs to see them. backoff writes only to standard error, one line per report, each starting with "backoff: ".
.PP
When an attempt fails and is retried, processes it left running in its process group are sent SIGTERM before the delay starts, so that they do not race the retry (a port still held, a lock still taken). After the last attempt and after success they are left alone.
.PP
backoff's options go before the command: every word from the command on is the command's, one of backoff's own options included. When the first attempt fails within a second with exit 2 or 64 (what programs give for bad usage) and one of its arguments is a long option of backoff's, backoff adds a note: \fBnote: '\-\-max\-retries' after the command is passed to curl, not to backoff\fR. The attempt is still retried as the rules say. A command given as one word (\fBbackoff "curl \-fsS URL"\fR) names a program that is not found; the error gives the command line that splits it (or runs it with \fBsh \-c\fR, when it holds what only a shell reads), and \fBbackoff help\fR is told \fBbackoff \-\-help\fR.
.PP
Each attempt searches PATH afresh, as \fBexecvp\fR(3) does: a directory where the program is missing lets the next one try, and a program found only where it cannot be executed fails with 126.
"#;

pub(super) const EXAMPLES: &str = r#".SH EXAMPLES
.TP
\fBbackoff \-\- curl \-fsS https://api.example.test/\fR
Retry a request up to 6 times with full jitter, waiting at most 100ms, 200ms, 400ms and so on, never more than 30s, under the curl preset that the program's name chooses: a 404 is not retried, a 503 is.
.TP
\fBbackoff \-\-base 1s \-\-cap 1m \-\-max\-retries 10 \-\- ./deploy.sh\fR
A slower, longer policy.
.TP
\fBbackoff \-\-preset curl \-\- curl \-fsS \-D /dev/stderr https://api.example.test/ | jq .\fR
Retry transient failures, 408, 425, 429 and 5xx, honour Retry\-After, and hand jq only the body of the final response: the curl preset, which the program's name chooses anyway, holds stdout.
.TP
\fBbackoff \-\-timeout 30s \-\-max\-time 5m \-\- ./integration\-tests\fR
Give each attempt 30 seconds and the whole run 5 minutes; a delay that would end after the deadline is not slept.
.TP
\fBbackoff \-\-poll 1s \-\-max\-time 60s \-\- pg_isready \-h 127.0.0.1\fR
Wait for a database, checking every second, for at most a minute.
.TP
\fBbackoff \-\-poll 2s \-\-max\-time 5m \-\-until\-output '"status" *: *"UP"' \-\- curl \-fsS http://localhost:8080/health\fR
Wait until a health endpoint says UP.
.TP
\fBbackoff \-\-until\-failure 200 \-\-delays 0s \-\-jitter none \-\- cargo test \-q flaky_test\fR
Hunt a flaky test: run it up to 200 times, stop at the first failure.
.TP
\fBbackoff \-\-forever \-\-reset\-after 10m \-\-cap 5m \-\- ./worker\fR
Supervise a worker: restart it when it crashes, and after ten healthy minutes start the delays over.
.TP
\fBbackoff \-\-retry\-on 75 \-\-stop\-on 1\-74,76\-255 \-\- ./sync\fR
Retry only on EX_TEMPFAIL.
.TP
\fBbackoff simulate \-\-clients 100 \-\-strategy full,exponential,policy\fR
See why jitter matters, with your own policy beside Brooker's.
.TP
\fBbackoff schedule \-\-jitter none \-\-base 100ms \-\-cap 30s\fR
Show the delays a policy produces, and run nothing.
.TP
\fB*/5 * * * * backoff \-q \-\-name sync \-\-metrics\-file /var/lib/node_exporter/sync.prom \-\- /usr/local/bin/sync\fR
In a crontab: quiet unless backoff itself fails, with metrics for Prometheus.
"#;
