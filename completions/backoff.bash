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
            *)
                ;;
        esac
    done

    case "${cmd}" in
        backoff)
            opts="-q -v -h -V --base --cap --factor --jitter --max-retries --attempts --forever --delays --poll --seed --retry-on --stop-on --success-on --until-output --consecutive --until-failure --reset-after --on-retry --on-give-up --on-success --hook-timeout --timeout --signal --kill-after --idle-timeout --max-time --preserve-status --retry-if-output --stop-if-output --retry-after --retry-after-pattern --retry-after-max --retry-after-jitter --idempotent --preset --hold-stdout --stream-stdout --replay-stdin --budget --budget-ratio --budget-burst --budget-dir --budget-store --budget-store-timeout --budget-store-fail --breaker --breaker-failures --breaker-cooldown --breaker-exit --quiet --verbose --name --timestamps --log-format --report --metrics-file --foreground --help --version schedule simulate budget breaker"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 1 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --base)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cap)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --factor)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --jitter)
                    COMPREPLY=($(compgen -W "none full equal decorrelated" -- "${cur}"))
                    return 0
                    ;;
                --max-retries)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --attempts)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --delays)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --poll)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --seed)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --retry-on)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --stop-on)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --success-on)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --until-output)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --consecutive)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --until-failure)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --reset-after)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --on-retry)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --on-give-up)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --on-success)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --hook-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --signal)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kill-after)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --idle-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-time)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --retry-if-output)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --stop-if-output)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --retry-after-pattern)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --retry-after-max)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --retry-after-jitter)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --preset)
                    COMPREPLY=($(compgen -W "curl wget git" -- "${cur}"))
                    return 0
                    ;;
                --budget)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --budget-ratio)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --budget-burst)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --budget-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --budget-store)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --budget-store-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --budget-store-fail)
                    COMPREPLY=($(compgen -W "open closed" -- "${cur}"))
                    return 0
                    ;;
                --breaker)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --breaker-failures)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --breaker-cooldown)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --breaker-exit)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --name)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json github gitlab" -- "${cur}"))
                    return 0
                    ;;
                --report)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --metrics-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        backoff__subcmd__breaker)
            opts="-h --help show reset"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        backoff__subcmd__breaker__subcmd__reset)
            opts="-h --budget-dir --budget-store --budget-store-timeout --budget-store-fail --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --budget-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --budget-store)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --budget-store-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --budget-store-fail)
                    COMPREPLY=($(compgen -W "open closed" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        backoff__subcmd__breaker__subcmd__show)
            opts="-h --budget-dir --budget-store --budget-store-timeout --budget-store-fail --format --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --budget-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --budget-store)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --budget-store-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --budget-store-fail)
                    COMPREPLY=($(compgen -W "open closed" -- "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        backoff__subcmd__budget)
            opts="-h --help show reset"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        backoff__subcmd__budget__subcmd__reset)
            opts="-h --budget-ratio --budget-burst --budget-dir --budget-store --budget-store-timeout --budget-store-fail --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --budget-ratio)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --budget-burst)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --budget-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --budget-store)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --budget-store-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --budget-store-fail)
                    COMPREPLY=($(compgen -W "open closed" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        backoff__subcmd__budget__subcmd__show)
            opts="-h --budget-ratio --budget-burst --budget-dir --budget-store --budget-store-timeout --budget-store-fail --format --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --budget-ratio)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --budget-burst)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --budget-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --budget-store)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --budget-store-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --budget-store-fail)
                    COMPREPLY=($(compgen -W "open closed" -- "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        backoff__subcmd__schedule)
            opts="-h --base --cap --factor --jitter --max-retries --attempts --forever --delays --poll --seed --format --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --base)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cap)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --factor)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --jitter)
                    COMPREPLY=($(compgen -W "none full equal decorrelated" -- "${cur}"))
                    return 0
                    ;;
                --max-retries)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --attempts)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --delays)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --poll)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --seed)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "table json csv" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        backoff__subcmd__simulate)
            opts="-h --model --clients --runs --strategy --base --cap --factor --jitter --seed --format --plot --scenario --rate --capacity --queue --timeout --brownout --outage-start --outage-length --horizon --max-retries --budget-ratio --budget-burst --breaker-failures --breaker-cooldown --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --model)
                    COMPREPLY=($(compgen -W "contention overload" -- "${cur}"))
                    return 0
                    ;;
                --clients)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --runs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --strategy)
                    COMPREPLY=($(compgen -W "none immediate exponential full equal decorrelated policy full+budget full+breaker" -- "${cur}"))
                    return 0
                    ;;
                --base)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cap)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --factor)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --jitter)
                    COMPREPLY=($(compgen -W "none full equal decorrelated" -- "${cur}"))
                    return 0
                    ;;
                --seed)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "table json csv svg" -- "${cur}"))
                    return 0
                    ;;
                --plot)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --scenario)
                    COMPREPLY=($(compgen -W "outage metastable" -- "${cur}"))
                    return 0
                    ;;
                --rate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --capacity)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --queue)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --brownout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --outage-start)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --outage-length)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --horizon)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-retries)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --budget-ratio)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --budget-burst)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --breaker-failures)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --breaker-cooldown)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
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
            --base|--cap|--factor|--jitter|--max-retries|--attempts|--delays|--poll|--seed|--retry-on|--stop-on|--success-on|--until-output|--consecutive|--reset-after|--on-retry|--on-give-up|--on-success|--hook-timeout|--timeout|--signal|--kill-after|--idle-timeout|--max-time|--retry-if-output|--stop-if-output|--retry-after-pattern|--retry-after-max|--retry-after-jitter|--preset|--budget|--budget-ratio|--budget-burst|--budget-dir|--budget-store|--budget-store-timeout|--budget-store-fail|--breaker|--breaker-failures|--breaker-cooldown|--breaker-exit|--name|--log-format|--report|--metrics-file)
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
                        schedule|simulate|budget|breaker) return ;;
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
        subcommands=($(compgen -W "schedule simulate budget breaker" -- "$cur"))
    fi
    COMPREPLY=()
    if declare -F _command_offset >/dev/null; then
        _command_offset "$start"
    elif (( start == COMP_CWORD )); then
        COMPREPLY=($(compgen -c -- "$cur"))
    else
        compopt -o filenames 2>/dev/null
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
    COMPREPLY=("${subcommands[@]}" "${COMPREPLY[@]}")
}
