// A `cnuas rack up` child process for the tests that drive the real command (test-cli-rack.cc,
// test-rack-peers-cli.cc): spawned with its output in DIR/up.log, its state file read back, and
// killed and cleaned up when the test ends, whatever happened.
#ifndef CNUAS_TESTS_RACK_CLI_PROCESS_H
#define CNUAS_TESTS_RACK_CLI_PROCESS_H

#include "cli-run.h"
#include "ib-test-packets.h"
#include "test-text-files.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace cnuas_test
{

inline std::string
TempDir()
{
    char t[] = "/tmp/cnuas-rack-cli-XXXXXX";
    const char* d = mkdtemp(t);
    return d ? d : "";
}

inline bool
Exists(const std::string& p)
{
    struct stat st = {};
    return lstat(p.c_str(), &st) == 0;
}

/// A `cnuas rack up` child with stdout/stderr in DIR/up.log.
struct RackProcess
{
    std::string dir;
    pid_t pid = -1;
    int exitStatus = -1;

    bool Start(const std::vector<std::string>& extra)
    {
        std::vector<std::string> args = {kCnuas, "rack", "up", "--state-dir", dir,
                                         "--pty-link", dir + "/tty", "--duration", "120"};
        args.insert(args.end(), extra.begin(), extra.end());
        std::vector<char*> argv;
        for (auto& a : args)
        {
            argv.push_back(a.data());
        }
        argv.push_back(nullptr);
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        const std::string log = dir + "/up.log";
        posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        posix_spawn_file_actions_adddup2(&fa, 1, 2);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        const int rc = posix_spawn(&pid, kCnuas.c_str(), &fa, nullptr, argv.data(), environ);
        posix_spawn_file_actions_destroy(&fa);
        return rc == 0;
    }

    /// The state file as it is now (null while it is not written yet).
    nlohmann::json State() const
    {
        return nlohmann::json::parse(ReadFile(dir + "/rack.json"), nullptr, false);
    }

    /// Waits for the state file; returns it (null if it did not come within 30 s).
    nlohmann::json WaitUp()
    {
        const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (std::chrono::steady_clock::now() < end)
        {
            nlohmann::json j = nlohmann::json::parse(ReadFile(dir + "/rack.json"), nullptr, false);
            if (j.is_object())
            {
                return j;
            }
            if (waitpid(pid, &exitStatus, WNOHANG) == pid)
            {
                pid = -1;
                return nlohmann::json();
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        return nlohmann::json();
    }

    /// Waits up to `seconds` for the child to exit; true with its status if it did.
    bool Wait(int seconds)
    {
        const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
        while (pid > 0 && std::chrono::steady_clock::now() < end)
        {
            if (waitpid(pid, &exitStatus, WNOHANG) == pid)
            {
                pid = -1;
                return true;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        return pid < 0;
    }

    ~RackProcess()
    {
        if (pid > 0)
        {
            kill(pid, SIGKILL);
            waitpid(pid, &exitStatus, 0);
        }
        RunCommand("rm -rf '" + dir + "'");
    }
};

} // namespace cnuas_test

#endif
