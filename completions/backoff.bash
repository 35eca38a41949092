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
            backoff,lock)
                cmd="backoff__subcmd__lock"
                ;;
            backoff,once)
                cmd="backoff__subcmd__once"
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
            backoff__subcmd__lock,reset)
                cmd="backoff__subcmd__lock__subcmd__reset"
                ;;
            backoff__subcmd__lock,show)
                cmd="backoff__subcmd__lock__subcmd__show"
                ;;
            backoff__subcmd__once,reset)
                cmd="backoff__subcmd__once__subcmd__reset"
                ;;
            backoff__subcmd__once,show)
                cmd="backoff__subcmd__once__subcmd__show"
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
            opts="-q -v -h -V --base --cap --factor --jitter --max-retries --attempts --forever --delays --poll --seed --retry-on --stop-on --success-on --until-output --consecutive --until-failure --reset-after --on-start --on-retry --on-give-up --on-success --hook-timeout --timeout --signal --kill-after --idle-timeout --max-time --splay --preserve-status --retry-if-output --stop-if-output --retry-after --retry-after-pattern --retry-after-max --retry-after-jitter --idempotent --preset --hold-stdout --stream-stdout --replay-stdin --output --output-limit --budget --budget-ratio --budget-burst --budget-dir --budget-store --budget-store-timeout --budget-store-fail --breaker --breaker-failures --breaker-cooldown --breaker-exit --throttle --throttle-window --throttle-k --lock --lock-wait --lock-exit --once-per --lock-ttl --lock-fail --lock-replace --lock-limit --ping --ping-start --ping-success --ping-fail --ping-timeout --ping-body-limit --alert-after --quiet --verbose --name --timestamps --log-format --report --metrics-file --metrics-push --metrics-push-timeout --foreground --generate --help --version schedule simulate budget breaker throttle lock once"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 1 ]] ; then
                _backoff_compgen -W "${opts}" -- "${cur}"
                return 0
            fi
            case "${prev}" in
                --base)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --cap)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --factor)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --jitter)
                    _backoff_compgen -W "none full equal decorrelated" -- "${cur}"
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --max-retries)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --attempts)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --delays)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --poll)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --seed)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --retry-on)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --stop-on)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --success-on)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --until-output)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --consecutive)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --until-failure)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --reset-after)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --on-start)
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
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --signal)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --kill-after)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --idle-timeout)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --max-time)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --splay)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --retry-if-output)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --stop-if-output)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --retry-after-pattern)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --retry-after-max)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --retry-after-jitter)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --preset)
                    _backoff_compgen -W "curl wget git none" -- "${cur}"
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --output)
                    _backoff_compgen -W "live on-failure" -- "${cur}"
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --output-limit)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --budget)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --budget-ratio)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --budget-burst)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --budget-dir)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --budget-store)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --budget-store-timeout)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --budget-store-fail)
                    _backoff_compgen -W "open closed" -- "${cur}"
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --breaker)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --breaker-failures)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --breaker-cooldown)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --breaker-exit)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --throttle)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --throttle-window)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --throttle-k)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --lock)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --lock-wait)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --lock-exit)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --once-per)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --lock-ttl)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --lock-fail)
                    _backoff_compgen -W "closed open" -- "${cur}"
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --lock-limit)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --ping)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --ping-start)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --ping-success)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --ping-fail)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --ping-timeout)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --ping-body-limit)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --alert-after)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --name)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --log-format)
                    _backoff_compgen -W "text json github gitlab" -- "${cur}"
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
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
                --metrics-push)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --metrics-push-timeout)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --generate)
                    _backoff_compgen -W "man man-schedule man-simulate man-budget man-breaker man-throttle man-lock man-once complete-bash complete-zsh complete-fish complete-powershell complete-elvish" -- "${cur}"
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
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
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --budget-store-timeout)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --budget-store-fail)
                    _backoff_compgen -W "open closed" -- "${cur}"
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --format)
                    _backoff_compgen -W "text json" -- "${cur}"
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
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
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --budget-store-timeout)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --budget-store-fail)
                    _backoff_compgen -W "open closed" -- "${cur}"
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --format)
                    _backoff_compgen -W "text json" -- "${cur}"
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
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
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --budget-burst)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --budget-dir)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --budget-store)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --budget-store-timeout)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --budget-store-fail)
                    _backoff_compgen -W "open closed" -- "${cur}"
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --format)
                    _backoff_compgen -W "text json" -- "${cur}"
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
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
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --budget-burst)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --budget-dir)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --budget-store)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --budget-store-timeout)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --budget-store-fail)
                    _backoff_compgen -W "open closed" -- "${cur}"
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --format)
                    _backoff_compgen -W "text json" -- "${cur}"
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            _backoff_compgen -W "${opts}" -- "${cur}"
            return 0
            ;;
        backoff__subcmd__lock)
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
        backoff__subcmd__lock__subcmd__reset)
            opts="-h --force --budget-dir --budget-store --budget-store-timeout --budget-store-fail --format --help"
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
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --budget-store-timeout)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --budget-store-fail)
                    _backoff_compgen -W "open closed" -- "${cur}"
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --format)
                    _backoff_compgen -W "text json" -- "${cur}"
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            _backoff_compgen -W "${opts}" -- "${cur}"
            return 0
            ;;
        backoff__subcmd__lock__subcmd__show)
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
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --budget-store-timeout)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --budget-store-fail)
                    _backoff_compgen -W "open closed" -- "${cur}"
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --format)
                    _backoff_compgen -W "text json" -- "${cur}"
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            _backoff_compgen -W "${opts}" -- "${cur}"
            return 0
            ;;
        backoff__subcmd__once)
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
        backoff__subcmd__once__subcmd__reset)
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
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --budget-store-timeout)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --budget-store-fail)
                    _backoff_compgen -W "open closed" -- "${cur}"
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --format)
                    _backoff_compgen -W "text json" -- "${cur}"
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            _backoff_compgen -W "${opts}" -- "${cur}"
            return 0
            ;;
        backoff__subcmd__once__subcmd__show)
            opts="-h --once-per --budget-dir --budget-store --budget-store-timeout --budget-store-fail --format --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                _backoff_compgen -W "${opts}" -- "${cur}"
                return 0
            fi
            case "${prev}" in
                --once-per)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --budget-dir)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --budget-store)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --budget-store-timeout)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --budget-store-fail)
                    _backoff_compgen -W "open closed" -- "${cur}"
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --format)
                    _backoff_compgen -W "text json" -- "${cur}"
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
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
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --cap)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --factor)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --jitter)
                    _backoff_compgen -W "none full equal decorrelated" -- "${cur}"
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --max-retries)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --attempts)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --delays)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --poll)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --seed)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --format)
                    _backoff_compgen -W "table json csv" -- "${cur}"
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
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
            opts="-h --model --clients --runs --strategy --base --cap --factor --jitter --seed --format --plot --scenario --rate --capacity --queue --timeout --brownout --outage-start --outage-length --horizon --max-retries --budget-ratio --budget-burst --breaker-failures --breaker-cooldown --throttle-window --throttle-k --splay --job --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                _backoff_compgen -W "${opts}" -- "${cur}"
                return 0
            fi
            case "${prev}" in
                --model)
                    _backoff_compgen -W "contention overload cron" -- "${cur}"
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --clients)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --runs)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --strategy)
                    _backoff_compgen -W "none immediate exponential full equal decorrelated policy full+budget full+breaker full+throttle full+budget+throttle" -- "${cur}"
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --base)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --cap)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --factor)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --jitter)
                    _backoff_compgen -W "none full equal decorrelated" -- "${cur}"
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --seed)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --format)
                    _backoff_compgen -W "table json csv svg" -- "${cur}"
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --plot)
                    _backoff_compgen -f -- "${cur}"
                    return 0
                    ;;
                --scenario)
                    _backoff_compgen -W "outage metastable" -- "${cur}"
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --rate)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --capacity)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --queue)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --brownout)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --outage-start)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --outage-length)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --horizon)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --max-retries)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --budget-ratio)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --budget-burst)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --breaker-failures)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --breaker-cooldown)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --throttle-window)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --throttle-k)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --splay)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --job)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
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
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --budget-store-timeout)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --budget-store-fail)
                    _backoff_compgen -W "open closed" -- "${cur}"
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --format)
                    _backoff_compgen -W "text json" -- "${cur}"
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
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
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --budget-store-timeout)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --budget-store-fail)
                    _backoff_compgen -W "open closed" -- "${cur}"
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --throttle-window)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --throttle-k)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --format)
                    _backoff_compgen -W "text json" -- "${cur}"
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
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
            --base|--cap|--factor|--jitter|--max-retries|--attempts|--delays|--poll|--seed|--retry-on|--stop-on|--success-on|--until-output|--consecutive|--reset-after|--on-start|--on-retry|--on-give-up|--on-success|--hook-timeout|--timeout|--signal|--kill-after|--idle-timeout|--max-time|--splay|--retry-if-output|--stop-if-output|--retry-after-pattern|--retry-after-max|--retry-after-jitter|--preset|--output|--output-limit|--budget|--budget-ratio|--budget-burst|--budget-dir|--budget-store|--budget-store-timeout|--budget-store-fail|--breaker|--breaker-failures|--breaker-cooldown|--breaker-exit|--throttle|--throttle-window|--throttle-k|--lock|--lock-wait|--lock-exit|--once-per|--lock-ttl|--lock-fail|--lock-limit|--ping|--ping-start|--ping-success|--ping-fail|--ping-timeout|--ping-body-limit|--alert-after|--name|--log-format|--report|--metrics-file|--metrics-push|--metrics-push-timeout|--generate)
                # bash splits `--base=1s` at the `=` (COMP_WORDBREAKS).
                if [[ ${COMP_WORDS[i + 1]} == = ]]; then
                    (( i += 3 ))
                else
                    (( i += 2 ))
                fi
                ;;
            --until-failure)
                if [[ ${COMP_WORDS[i + 1]} == = ]]; then
                    (( i += 3 ))
                elif [[ ${COMP_WORDS[i + 1]} =~ ^[0-9]+$ ]]; then
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
                        schedule|simulate|budget|breaker|throttle|lock|once) return ;;
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
        # After `--jitter=` (split at the `=`), the value is completed as
        # after `--jitter `: the option is the word before the `=`.
        local prev=${COMP_WORDS[COMP_CWORD - 1]}
        if [[ $cur == = && $prev == -* ]]; then
            cur=
        elif [[ $prev == = && ${COMP_WORDS[COMP_CWORD - 2]} == -* ]]; then
            prev=${COMP_WORDS[COMP_CWORD - 2]}
        fi
        _backoff_options "${COMP_WORDS[0]}" "$cur" "$prev"
        return
    fi
    local -a subcommands=()
    if (( start == 1 )); then
        _backoff_compgen -W "schedule simulate budget breaker throttle lock once" -- "$cur"
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
