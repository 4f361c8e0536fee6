#!/usr/bin/env Rscript
# sdcMicro's one try on the business survey, for benchmarks/working_object.py (issue 43):
# createSdcObj() with the six amounts as numerical variables and region as key and stratum,
# (a copy of it: sdcMicro takes no key as strataVar),
# microaggregation(method = "mdav", aggr = 5) within region, then the risk it keeps
# (the individual and global risk over the keys, the distance-based risk of the amounts).
#
# Usage:
#   R_LIBS=$SDCMICRO_LIB Rscript --vanilla benchmarks/sdcmicro_working_object.R IN_CSV REPEATS
#
# Reading the file is outside the clock; each repeat times the three calls. The last line
# printed is RESULT,<median seconds>,<min seconds>,<repeats>.

suppressPackageStartupMessages(library(sdcMicro))

args <- commandArgs(trailingOnly = TRUE)
if (length(args) != 2) stop("usage: sdcmicro_working_object.R IN_CSV REPEATS")
dat <- read.csv(args[1], stringsAsFactors = FALSE)
dat$region <- factor(dat$region)
# sdcMicro refuses a key as its stratum variable: the stratum is a copy of region
dat$stratum <- as.integer(dat$region)
repeats <- as.integer(args[2])
amounts <- c("employees", "turnover", "wages", "other_costs", "total_costs", "profit")

one_try <- function() {
  sdc <- createSdcObj(dat, keyVars = "region", numVars = amounts, strataVar = "stratum")
  sdc <- microaggregation(sdc, method = "mdav", aggr = 5)
  risk <- get.sdcMicroObj(sdc, "risk")
  c(risk$global$risk, risk$numeric)
}

invisible(one_try())  # warm: the first call loads and compiles what the package defers
times <- vapply(seq_len(repeats), function(i) system.time(one_try())[["elapsed"]], numeric(1))
cat(sprintf("RESULT,%.4f,%.4f,%d\n", median(times), min(times), repeats))
