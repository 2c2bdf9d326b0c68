/* A shared library that is not built with lib_api.h: it claims another
 * ABI version (WRONG_ABI) or exports no entry point at all. */
#ifdef WRONG_ABI
int mxlib_abi_version(void) { return 999; }
#else
int unrelated_function(void) { return 1; }
#endif
