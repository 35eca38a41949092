/* Wine 8 has no bcryptprimitives.dll, whose ProcessPrng Rust's standard
 * library imports for random numbers on Windows, so no Rust program loads
 * under it. This stand-in, built with MinGW and put beside the .exe for
 * the tests alone, exports ProcessPrng over advapi32's RtlGenRandom
 * (SystemFunction036), which Wine has. It is never shipped. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
