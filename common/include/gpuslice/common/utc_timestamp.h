/* A log line's time, "2026-12-06T09:01:02.345Z" (UTC, milliseconds cut,
 * not rounded), in one place for the two writers of gpuslice-runtime's log:
 * log::utc_timestamp (C++, after glibc's start-up) and the fast path's
 * entry (shim/fast_path, freestanding C that runs before it). Header-only
 * and free of any include or library call, so that each compiles it with
 * its own flags: the entry's without a stack protector or sanitizer, which
 * a function linked from gpuslice_common would carry. */
#ifndef GPUSLICE_COMMON_UTC_TIMESTAMP_H
#define GPUSLICE_COMMON_UTC_TIMESTAMP_H

#define GPUSLICE_UTC_TIMESTAMP_SIZE 25 /* its 24 characters and a NUL */

static inline char *gpuslice_utc_two_digits(char *p, long long v) {
  p[0] = (char)('0' + v / 10 % 10);
  p[1] = (char)('0' + v % 10);
  return p + 2;
}

/* Years 0 to 9999 (the seconds of 0000-01-01 to 9999-12-31 since the epoch). */
static inline void gpuslice_utc_timestamp(long long sec, long nsec, char out[GPUSLICE_UTC_TIMESTAMP_SIZE]) {
  /* Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's
   * civil_from_days): 400-year eras that start on 0000-03-01, so that a
   * leap day ends its year. */
  long long days = sec / 86400, second = sec % 86400;
  if (second < 0) {
    second += 86400;
    --days;
  }
  const long long z = days + 719468;
  const long long era = (z >= 0 ? z : z - 146096) / 146097;
  const long long day_of_era = z - era * 146097;
  const long long year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146096) / 365;
  const long long day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
  const long long month_from_march = (5 * day_of_year + 2) / 153;
  const long long day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
  const long long month = month_from_march < 10 ? month_from_march + 3 : month_from_march - 9;
  const long long year = year_of_era + era * 400 + (month <= 2);
  char *p = gpuslice_utc_two_digits(gpuslice_utc_two_digits(out, year / 100), year % 100);
  *p++ = '-';
  p = gpuslice_utc_two_digits(p, month);
  *p++ = '-';
  p = gpuslice_utc_two_digits(p, day);
  *p++ = 'T';
  p = gpuslice_utc_two_digits(p, second / 3600);
  *p++ = ':';
  p = gpuslice_utc_two_digits(p, second / 60 % 60);
  *p++ = ':';
  p = gpuslice_utc_two_digits(p, second % 60);
  *p++ = '.';
  const long ms = nsec / 1000000;
  *p++ = (char)('0' + ms / 100);
  p = gpuslice_utc_two_digits(p, ms % 100);
  *p++ = 'Z';
  *p = '\0';
}

#endif
