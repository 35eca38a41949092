_backoff_options() {
    local i cur prev opts cmd
    COMPREPLY=()
    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
        cur="$2"
    else
        cur="${COMP_WORDS[COMP_CWORD]}"
    fi
    prev="$3"
    cmd=""
    opts=""

    for i in "${COMP_WORDS[@]:0:COMP_CWORD}"
    do
        case "${cmd},${i}" in
            ",$1")
                cmd="backoff"
                ;;
            backoff,breaker)
                cmd="backoff__subcmd__breaker"
                ;;
            backoff,budget)
                cmd="backoff__subcmd__budget"
                ;;
            backoff,schedule)
                cmd="backoff__subcmd__schedule"
                ;;
            backoff,simulate)
                cmd="backoff__subcmd__simulate"
                ;;
            backoff,throttle)
                cmd="backoff__subcmd__throttle"
                ;;
            backoff__subcmd__breaker,reset)
                cmd="backoff__subcmd__breaker__subcmd__reset"
                ;;
            backoff__subcmd__breaker,show)
                cmd="backoff__subcmd__breaker__subcmd__show"
                ;;
            backoff__subcmd__budget,reset)
                cmd="backoff__subcmd__budget__subcmd__reset"
                ;;
            backoff__subcmd__budget,show)
                cmd="backoff__subcmd__budget__subcmd__show"
                ;;
            backoff__subcmd__throttle,reset)
                cmd="backoff__subcmd__throttle__subcmd__reset"
                ;;
            backoff__subcmd__throttle,show)
                cmd="backoff__subcmd__throttle__subcmd__show"
                ;;
            *)
                ;;
        esac
    done

    case "${cmd}" in
        backoff)
            opts="-q -v -h -V --base --cap --factor --jitter --max-retries --attempts --forever --delays --poll --seed --retry-on --stop-on --success-on --until-output --consecutive --until-failure --reset-after --on-retry --on-give-up --on-success --hook-timeout --timeout --signal --kill-after --idle-timeout --max-time --preserve-status --retry-if-output --stop-if-output --retry-after --retry-after-pattern --retry-after-max --retry-after-jitter --idempotent --preset --hold-stdout --stream-stdout --replay-stdin --budget --budget-ratio --budget-burst --budget-dir --budget-store --budget-store-timeout --budget-store-fail --breaker --breaker-failures --breaker-cooldown --breaker-exit --throttle --throttle-window --throttle-k --quiet --verbose --name --timestamps --log-format --report --metrics-file --foreground --help --version schedule simulate budget breaker throttle"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 1 ]] ; then
                _backoff_compgen -W "${opts}" -- "${cur}"
                return 0
            fi
            case "${prev}" in
                --base)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --cap)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --factor)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --jitter)
                    _backoff_compgen -W "none full equal decorrelated" -- "${cur}"
                    return 0
                    ;;
                --max-retries)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --attempts)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --delays)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --poll)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --seed)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --retry-on)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --stop-on)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --success-on)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --until-output)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --consecutive)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --until-failure)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --reset-after)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --on-retry)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --on-give-up)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --on-success)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --hook-timeout)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --timeout)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --signal)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --kill-after)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --idle-timeout)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --max-time)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --retry-if-output)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --stop-if-output)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --retry-after-pattern)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --retry-after-max)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --retry-after-jitter)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --preset)
                    _backoff_compgen -W "curl wget git none" -- "${cur}"
                    return 0
                    ;;
                --budget)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --budget-ratio)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --budget-burst)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --budget-dir)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --budget-store)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --budget-store-timeout)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --budget-store-fail)
                    _backoff_compgen -W "open closed" -- "${cur}"
                    return 0
                    ;;
                --breaker)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --breaker-failures)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --breaker-cooldown)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --breaker-exit)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --throttle)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --throttle-window)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --throttle-k)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --name)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --log-format)
                    _backoff_compgen -W "text json github gitlab" -- "${cur}"
                    return 0
                    ;;
                --report)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --metrics-file)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            _backoff_compgen -W "${opts}" -- "${cur}"
            return 0
            ;;
        backoff__subcmd__breaker)
            opts="-h --help show reset"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                _backoff_compgen -W "${opts}" -- "${cur}"
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            _backoff_compgen -W "${opts}" -- "${cur}"
            return 0
            ;;
        backoff__subcmd__breaker__subcmd__reset)
            opts="-h --budget-dir --budget-store --budget-store-timeout --budget-store-fail --format --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                _backoff_compgen -W "${opts}" -- "${cur}"
                return 0
            fi
            case "${prev}" in
                --budget-dir)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --budget-store)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --budget-store-timeout)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --budget-store-fail)
                    _backoff_compgen -W "open closed" -- "${cur}"
                    return 0
                    ;;
                --format)
                    _backoff_compgen -W "text json" -- "${cur}"
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            _backoff_compgen -W "${opts}" -- "${cur}"
            return 0
            ;;
        backoff__subcmd__breaker__subcmd__show)
            opts="-h --budget-dir --budget-store --budget-store-timeout --budget-store-fail --format --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                _backoff_compgen -W "${opts}" -- "${cur}"
                return 0
            fi
            case "${prev}" in
                --budget-dir)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --budget-store)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --budget-store-timeout)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --budget-store-fail)
                    _backoff_compgen -W "open closed" -- "${cur}"
                    return 0
                    ;;
                --format)
                    _backoff_compgen -W "text json" -- "${cur}"
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            _backoff_compgen -W "${opts}" -- "${cur}"
            return 0
            ;;
        backoff__subcmd__budget)
            opts="-h --help show reset"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                _backoff_compgen -W "${opts}" -- "${cur}"
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            _backoff_compgen -W "${opts}" -- "${cur}"
            return 0
            ;;
        backoff__subcmd__budget__subcmd__reset)
            opts="-h --budget-ratio --budget-burst --budget-dir --budget-store --budget-store-timeout --budget-store-fail --format --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                _backoff_compgen -W "${opts}" -- "${cur}"
                return 0
            fi
            case "${prev}" in
                --budget-ratio)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --budget-burst)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --budget-dir)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --budget-store)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --budget-store-timeout)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --budget-store-fail)
                    _backoff_compgen -W "open closed" -- "${cur}"
                    return 0
                    ;;
                --format)
                    _backoff_compgen -W "text json" -- "${cur}"
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            _backoff_compgen -W "${opts}" -- "${cur}"
            return 0
            ;;
        backoff__subcmd__budget__subcmd__show)
            opts="-h --budget-ratio --budget-burst --budget-dir --budget-store --budget-store-timeout --budget-store-fail --format --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                _backoff_compgen -W "${opts}" -- "${cur}"
                return 0
            fi
            case "${prev}" in
                --budget-ratio)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --budget-burst)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --budget-dir)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --budget-store)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --budget-store-timeout)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --budget-store-fail)
                    _backoff_compgen -W "open closed" -- "${cur}"
                    return 0
                    ;;
                --format)
                    _backoff_compgen -W "text json" -- "${cur}"
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            _backoff_compgen -W "${opts}" -- "${cur}"
            return 0
            ;;
        backoff__subcmd__schedule)
            opts="-h --base --cap --factor --jitter --max-retries --attempts --forever --delays --poll --seed --format --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                _backoff_compgen -W "${opts}" -- "${cur}"
                return 0
            fi
            case "${prev}" in
                --base)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --cap)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --factor)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --jitter)
                    _backoff_compgen -W "none full equal decorrelated" -- "${cur}"
                    return 0
                    ;;
                --max-retries)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --attempts)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --delays)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --poll)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --seed)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --format)
                    _backoff_compgen -W "table json csv" -- "${cur}"
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            _backoff_compgen -W "${opts}" -- "${cur}"
            return 0
            ;;
        backoff__subcmd__simulate)
            opts="-h --model --clients --runs --strategy --base --cap --factor --jitter --seed --format --plot --scenario --rate --capacity --queue --timeout --brownout --outage-start --outage-length --horizon --max-retries --budget-ratio --budget-burst --breaker-failures --breaker-cooldown --throttle-window --throttle-k --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                _backoff_compgen -W "${opts}" -- "${cur}"
                return 0
            fi
            case "${prev}" in
                --model)
                    _backoff_compgen -W "contention overload" -- "${cur}"
                    return 0
                    ;;
                --clients)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --runs)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --strategy)
                    _backoff_compgen -W "none immediate exponential full equal decorrelated policy full+budget full+breaker full+throttle full+budget+throttle" -- "${cur}"
                    return 0
                    ;;
                --base)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --cap)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --factor)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --jitter)
                    _backoff_compgen -W "none full equal decorrelated" -- "${cur}"
                    return 0
                    ;;
                --seed)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --format)
                    _backoff_compgen -W "table json csv svg" -- "${cur}"
                    return 0
                    ;;
                --plot)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --scenario)
                    _backoff_compgen -W "outage metastable" -- "${cur}"
                    return 0
                    ;;
                --rate)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --capacity)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --queue)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --timeout)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --brownout)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --outage-start)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --outage-length)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --horizon)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --max-retries)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --budget-ratio)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --budget-burst)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --breaker-failures)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --breaker-cooldown)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --throttle-window)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --throttle-k)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            _backoff_compgen -W "${opts}" -- "${cur}"
            return 0
            ;;
        backoff__subcmd__throttle)
            opts="-h --help show reset"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                _backoff_compgen -W "${opts}" -- "${cur}"
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            _backoff_compgen -W "${opts}" -- "${cur}"
            return 0
            ;;
        backoff__subcmd__throttle__subcmd__reset)
            opts="-h --budget-dir --budget-store --budget-store-timeout --budget-store-fail --format --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                _backoff_compgen -W "${opts}" -- "${cur}"
                return 0
            fi
            case "${prev}" in
                --budget-dir)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --budget-store)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --budget-store-timeout)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --budget-store-fail)
                    _backoff_compgen -W "open closed" -- "${cur}"
                    return 0
                    ;;
                --format)
                    _backoff_compgen -W "text json" -- "${cur}"
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            _backoff_compgen -W "${opts}" -- "${cur}"
            return 0
            ;;
        backoff__subcmd__throttle__subcmd__show)
            opts="-h --budget-dir --budget-store --budget-store-timeout --budget-store-fail --throttle-window --throttle-k --format --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                _backoff_compgen -W "${opts}" -- "${cur}"
                return 0
            fi
            case "${prev}" in
                --budget-dir)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --budget-store)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --budget-store-timeout)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --budget-store-fail)
                    _backoff_compgen -W "open closed" -- "${cur}"
                    return 0
                    ;;
                --throttle-window)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --throttle-k)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --format)
                    _backoff_compgen -W "text json" -- "${cur}"
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            _backoff_compgen -W "${opts}" -- "${cur}"
            return 0
            ;;
    esac
}

if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -F _backoff -o nosort -o bashdefault -o default backoff
else
    complete -F _backoff -o bashdefault -o default backoff
fi

# The command backoff runs, and its arguments: after `--`, or from the first
# word that is neither an option, an option's value nor a subcommand, they
# are completed as the command's own completion would (bash-completion's
# _command_offset), or as command names and then file names without it.

# Prints the index in COMP_WORDS where the command starts, if the cursor is
# in it.
_backoff_command_start() {
    local i=1
    while (( i < COMP_CWORD )); do
        case ${COMP_WORDS[i]} in
            --)
                echo $(( i + 1 ))
                return
                ;;
            --base|--cap|--factor|--jitter|--max-retries|--attempts|--delays|--poll|--seed|--retry-on|--stop-on|--success-on|--until-output|--consecutive|--reset-after|--on-retry|--on-give-up|--on-success|--hook-timeout|--timeout|--signal|--kill-after|--idle-timeout|--max-time|--retry-if-output|--stop-if-output|--retry-after-pattern|--retry-after-max|--retry-after-jitter|--preset|--budget|--budget-ratio|--budget-burst|--budget-dir|--budget-store|--budget-store-timeout|--budget-store-fail|--breaker|--breaker-failures|--breaker-cooldown|--breaker-exit|--throttle|--throttle-window|--throttle-k|--name|--log-format|--report|--metrics-file)
                (( i += 2 ))
                ;;
            --until-failure)
                if [[ ${COMP_WORDS[i + 1]} =~ ^[0-9]+$ ]]; then
                    (( i += 2 ))
                else
                    (( i += 1 ))
                fi
                ;;
            -*)
                (( i += 1 ))
                ;;
            *)
                if (( i == 1 )); then
                    case ${COMP_WORDS[i]} in
                        schedule|simulate|budget|breaker|throttle) return ;;
                    esac
                fi
                echo "$i"
                return
                ;;
        esac
    done
    if (( i == COMP_CWORD )) && [[ ${COMP_WORDS[COMP_CWORD]} != -* ]]; then
        echo "$i"
    fi
}

_backoff() {
    local cur=${COMP_WORDS[COMP_CWORD]} start
    start=$(_backoff_command_start)
    if [[ -z $start ]]; then
        _backoff_options "${COMP_WORDS[0]}" "$cur" "${COMP_WORDS[COMP_CWORD - 1]}"
        return
    fi
    local -a subcommands=()
    if (( start == 1 )); then
        _backoff_compgen -W "schedule simulate budget breaker throttle" -- "$cur"
        subcommands=("${COMPREPLY[@]}")
    fi
    COMPREPLY=()
    if declare -F _command_offset >/dev/null; then
        _command_offset "$start"
    elif (( start == COMP_CWORD )); then
        _backoff_compgen -c -- "$cur"
    else
        _backoff_compgen -f -- "$cur"
    fi
    COMPREPLY=("${subcommands[@]}" "${COMPREPLY[@]}")
}

# Sets COMPREPLY to the words `compgen "$@"` prints, one a line, so that a
# file name with spaces stays one word; file names (-f) are quoted when
# bash inserts them, and a directory gets its slash.
_backoff_compgen() {
    COMPREPLY=()
    local word
    while IFS= read -r word; do
        COMPREPLY+=("$word")
    done < <(compgen "$@")
    if [[ $1 == -f ]]; then
        compopt -o filenames 2>/dev/null
    fi
    return 0
}
