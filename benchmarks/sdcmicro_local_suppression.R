#!/usr/bin/env Rscript
# sdcMicro's localSuppression() on a CSV, for the side-by-side table with sdcflow (issue 40).
#
# Usage:
#   R_LIBS=$SDCMICRO_LIB Rscript --vanilla benchmarks/sdcmicro_local_suppression.R \
#     IN_CSV OUT_CSV K KEYS [WEIGHT] [--age-breaks=15,20,...,90]
#
#   KEYS    comma-separated key columns, each made a factor, as sdcMicro users do
#   WEIGHT  sampling-weight column, or "-" (the default) for none
#   --age-breaks=  sdcMicro's globalRecode() of "age" (right-closed intervals) before suppression
#
# OUT_CSV holds the released key columns in the input's row order, a missing value as an empty
# field. The last line printed is RESULT,<elapsed seconds>,<values suppressed>,<records>, the one
# before it cpu_seconds,<user + system seconds>; both clocks cover the localSuppression() call
# only (reading, recoding and writing are outside them).

suppressPackageStartupMessages({
  library(sdcMicro)
  library(data.table)
})

args <- commandArgs(trailingOnly = TRUE)
breaks_arg <- grep("^--age-breaks=", args, value = TRUE)
args <- setdiff(args, breaks_arg)
if (length(args) < 4 || length(args) > 5) {
  stop("usage: sdcmicro_local_suppression.R IN_CSV OUT_CSV K KEYS [WEIGHT] [--age-breaks=...]")
}
in_csv <- args[1]
out_csv <- args[2]
k <- as.integer(args[3])
keys <- strsplit(args[4], ",", fixed = TRUE)[[1]]
weight <- if (length(args) == 5 && args[5] != "-") args[5] else NULL
breaks <- if (length(breaks_arg)) {
  as.numeric(strsplit(sub("^--age-breaks=", "", breaks_arg[1]), ",", fixed = TRUE)[[1]])
} else {
  NULL
}

# Values are read as text and trimmed first: Adult's raw file writes " Male", and "?" is missing.
dat <- read.csv(in_csv, colClasses = "character", check.names = FALSE, na.strings = character())
dat[] <- lapply(dat, trimws)
dat[] <- lapply(dat, function(v) replace(v, v %in% c("?", ""), NA))
absent <- setdiff(c(keys, weight), names(dat))
if (length(absent)) stop("columns not in ", in_csv, ": ", paste(absent, collapse = ","))

# globalRecode() cuts numbers and refuses factors, so a recoded age stays numeric until then.
for (key in keys) {
  dat[[key]] <- if (key == "age" && !is.null(breaks)) as.numeric(dat[[key]]) else factor(dat[[key]])
}
if (!is.null(weight)) dat[[weight]] <- as.numeric(dat[[weight]])
if (!is.null(breaks)) {
  stopifnot("age" %in% keys)
  age <- dat$age[!is.na(dat$age)]
  # cut() would turn an age outside the breaks into a missing value, counted as no suppression.
  if (any(age <= min(breaks) | age > max(breaks))) {
    stop(sprintf("ages %g..%g fall outside the breaks (%g, %g]",
                 min(age), max(age), min(breaks), max(breaks)))
  }
}

# sdcMicro evaluates column names as R symbols, so "marital-status" becomes "marital.status"
# inside and gets its own name back in OUT_CSV.
dat <- dat[, c(keys, weight), drop = FALSE]
names(dat) <- make.names(names(dat), unique = TRUE)
inner <- names(dat)[seq_along(keys)]
inner_weight <- if (is.null(weight)) NULL else names(dat)[length(keys) + 1]
obj <- createSdcObj(dat, keyVars = inner, weightVar = inner_weight)
if (!is.null(breaks)) obj <- globalRecode(obj, column = "age", breaks = breaks)
before <- get.sdcMicroObj(obj, type = "manipKeyVars")

timing <- system.time(obj <- localSuppression(obj, k = k))
elapsed <- timing[["elapsed"]]

released <- get.sdcMicroObj(obj, type = "manipKeyVars")
# Values suppressed are the missing values that localSuppression() added, not those of the input.
suppressed <- sum(is.na(released)) - sum(is.na(before))
stopifnot(suppressed == sum(obj@localSuppression$supps))
# A value not suppressed equals the input's (recoded) value: the row order is the input's.
for (key in inner) {
  kept <- !is.na(released[[key]])
  input <- if (key == "age" && !is.null(breaks)) cut(dat$age, breaks, dig.lab = 8) else dat[[key]]
  stopifnot(identical(as.character(released[[key]][kept]), as.character(input[kept])))
}

released <- as.data.frame(released)[, inner, drop = FALSE]
names(released) <- keys
fwrite(released, out_csv, na = "")
print(obj, type = "ls")
# On a shared machine the wall time includes waiting; the CPU seconds are sdcMicro's own work.
cat(sprintf("cpu_seconds,%.3f\n", timing[["user.self"]] + timing[["sys.self"]]))
cat(sprintf("RESULT,%.3f,%d,%d\n", elapsed, suppressed, nrow(released)))
