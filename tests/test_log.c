/* The run-time version and the library's own output. */
#include "ks_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

START_TEST(test_version)
{
    ck_assert_str_eq(ks_version(), KS_VERSION_STRING);
    char macro[32];
    snprintf(macro, sizeof macro, "%d.%d.%d", KS_VERSION_MAJOR, KS_VERSION_MINOR,
             KS_VERSION_PATCH);
    ck_assert_str_eq(ks_version(), macro);
    /* The header agrees with meson.build's project version. */
    const char *proj = getenv("KS_PROJECT_VERSION");
    ck_assert_ptr_nonnull(proj);
    ck_assert_str_eq(ks_version(), proj);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("log");
    TCase *tc = tcase_create("log");
    tcase_add_test(tc, test_version);
    suite_add_tcase(s, tc);
    return ks_test_run(s);
}
