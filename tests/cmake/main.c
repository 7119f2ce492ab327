/* Built by tests/cmake/CMakeLists.txt against the installed package: the
 * header and the library it finds agree, and the library runs. */
#include <ksolve.h>

#include <stdio.h>
#include <string.h>

int main(void)
{
    printf("ksolve %s\n", ks_version());
    if (strcmp(ks_version(), KS_VERSION_STRING) != 0) {
        fprintf(stderr, "header %s, library %s\n", KS_VERSION_STRING, ks_version());
        return 1;
    }
    return 0;
}
