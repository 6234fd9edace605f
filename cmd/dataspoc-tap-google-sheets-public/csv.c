/* dataspoc-tap-google-sheets-public: dataspoc-tap-csv's CSV reader, compiled here too. */
#include "../dataspoc-tap-csv/csv.c"
