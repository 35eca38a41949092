/* A test helper for backoff's Windows build, run under Wine by
 * tests/integration/windows.rs (built with MinGW by .ci/run):
 *
 *   helper exit CODE           exits with CODE (decimal or 0x hex)
 *   helper sleep MS            sleeps MS milliseconds, then exits 0
 *   helper deaf MS             as sleep, ignoring every console control
 *                              event (Ctrl-C, Ctrl-Break, close)
 *   helper polite MS FILE      as sleep, but Ctrl-Break or Ctrl-C makes it
 *                              write the event's number to FILE and exit
 *                              42 at once
 *   helper tree DEPTH MS FILE  appends its process id to FILE, starts
 *                              `helper tree DEPTH-1 MS FILE` (detached
 *                              from the console) while DEPTH > 1, then
 *                              sleeps MS milliseconds
 *   helper spawn MS FILE       starts `helper tree 1 MS FILE` detached
 *                              from the console, waits until it wrote its
 *                              id, then exits 0 at once
 *   helper alive FILE          exits with how many of the process ids in
 *                              FILE still run
 *   helper cat                 copies its stdin to its stdout
 *   helper env NAME            prints NAME's value (or "unset")
 */
#include <windows.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static BOOL WINAPI ignore(DWORD event) { (void)event; return TRUE; }

/* Starts `helper tree DEPTH MS FILE` detached from the console, not
 * waited for. */
static int start_tree(int depth, DWORD ms, const char *file)
{
    char self[MAX_PATH], line[3 * MAX_PATH];
    STARTUPINFOA si;
    PROCESS_INFORMATION pi;
    GetModuleFileNameA(NULL, self, MAX_PATH);
    snprintf(line, sizeof line, "\"%s\" tree %d %lu \"%s\"", self, depth, ms, file);
    memset(&si, 0, sizeof si);
    si.cb = sizeof si;
    if (!CreateProcessA(NULL, line, NULL, NULL, FALSE, DETACHED_PROCESS, NULL, NULL, &si, &pi))
        return 3;
    CloseHandle(pi.hThread);
    CloseHandle(pi.hProcess);
    return 0;
}

static const char *polite_file;

static BOOL WINAPI polite(DWORD event)
{
    FILE *f = fopen(polite_file, "w");
    if (f) {
        fprintf(f, "%lu\n", event);
        fclose(f);
    }
    ExitProcess(42);
    return TRUE;
}

static int tree(int depth, DWORD ms, const char *file)
{
    FILE *f = fopen(file, "a");
    if (!f) return 2;
    fprintf(f, "%lu\n", GetCurrentProcessId());
    fclose(f);
    if (depth > 1 && start_tree(depth - 1, ms, file))
        return 3;
    Sleep(ms);
    return 0;
}

static long lines_in(const char *file)
{
    long n = 0;
    int c;
    FILE *f = fopen(file, "r");
    if (!f) return 0;
    while ((c = fgetc(f)) != EOF)
        if (c == '\n') n++;
    fclose(f);
    return n;
}

static int spawn(DWORD ms, const char *file)
{
    int waited;
    if (start_tree(1, ms, file))
        return 3;
    for (waited = 0; waited < 20000 && lines_in(file) < 1; waited += 10)
        Sleep(10);
    return 0;
}

static int alive(const char *file)
{
    unsigned long pid;
    int n = 0;
    FILE *f = fopen(file, "r");
    if (!f) return 100;
    while (fscanf(f, "%lu", &pid) == 1) {
        HANDLE h = OpenProcess(SYNCHRONIZE, FALSE, pid);
        if (h) {
            if (WaitForSingleObject(h, 0) == WAIT_TIMEOUT) n++;
            CloseHandle(h);
        }
    }
    fclose(f);
    return n;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && !strcmp(argv[1], "exit"))
        ExitProcess((UINT)strtoul(argv[2], NULL, 0));
    if (argc >= 3 && !strcmp(argv[1], "sleep")) {
        Sleep(strtoul(argv[2], NULL, 10));
        return 0;
    }
    if (argc >= 3 && !strcmp(argv[1], "deaf")) {
        SetConsoleCtrlHandler(ignore, TRUE);
        Sleep(strtoul(argv[2], NULL, 10));
        return 0;
    }
    if (argc >= 4 && !strcmp(argv[1], "polite")) {
        polite_file = argv[3];
        SetConsoleCtrlHandler(polite, TRUE);
        Sleep(strtoul(argv[2], NULL, 10));
        return 0;
    }
    if (argc >= 5 && !strcmp(argv[1], "tree"))
        return tree(atoi(argv[2]), strtoul(argv[3], NULL, 10), argv[4]);
    if (argc >= 4 && !strcmp(argv[1], "spawn"))
        return spawn(strtoul(argv[2], NULL, 10), argv[3]);
    if (argc >= 3 && !strcmp(argv[1], "alive"))
        return alive(argv[2]);
    if (argc >= 2 && !strcmp(argv[1], "cat")) {
        int c;
        while ((c = getchar()) != EOF)
            putchar(c);
        return 0;
    }
    if (argc >= 3 && !strcmp(argv[1], "env")) {
        const char *v = getenv(argv[2]);
        printf("%s\n", v ? v : "unset");
        return 0;
    }
    fprintf(stderr, "helper: unknown use\n");
    return 64;
}
