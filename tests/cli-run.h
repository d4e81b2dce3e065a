// Running the `cnuas` command line from a test: its path, and one run with its status, standard
// output and standard error (test-cli.cc, test-cli-hardening.cc, and the tests that start it
// themselves: test-cli-pcap.cc, test-roce-side-by-side.cc, rack-cli-process.h).
#ifndef CNUAS_TESTS_CLI_RUN_H
#define CNUAS_TESTS_CLI_RUN_H

#include "test-text-files.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <sys/wait.h>

/// The command line of this build.
inline const std::string kCnuas = CNUAS_BINARY_DIR "/bin/cnuas";

struct CliResult
{
    int status; ///< the exit status; a signal shows as 128 + its number
    std::string out;
    std::string err;
};

/// Runs `cnuas ARGS` (ARGS as shell words) in `cwd`, capturing stdout, stderr and the status.
inline CliResult
RunCli(const std::string& args, const std::filesystem::path& cwd)
{
    const std::filesystem::path errFile = cwd / ".stderr";
    const std::string cmd = "cd '" + cwd.string() + "' && '" + kCnuas + "' " + args + " 2>'" +
                            errFile.string() + "'";
    CliResult r{-1, "", ""};
    int st;
    if (!ShellRun(cmd, r.out, st))
    {
        ADD_FAILURE() << "popen failed for " << cmd;
        return r;
    }
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    r.err = ReadFile(errFile);
    std::filesystem::remove(errFile);
    return r;
}

#endif
