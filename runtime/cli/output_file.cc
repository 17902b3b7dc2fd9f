#include "output_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

namespace tarn::cli {
namespace {

// mkstemp's template: the X's become a name no file in the directory has.
constexpr char kTemporarySuffix[] = ".partial-XXXXXX";

Status CannotWrite(const std::string& path) {
  return Status(StatusCode::kIoError,
                "cannot write '" + path + "': " + std::strerror(errno));
}

// The mode a file created by open() gets (0666 less the umask): mkstemp
// makes its file 0600, and the output should not be more private than a
// file written directly.
mode_t NewFileMode() {
  const mode_t mask = umask(0);
  umask(mask);
  return 0666 & ~mask;
}

// The temporaries being written, for a signal that ends the run (Ctrl-C,
// kill, a closed terminal, a reader gone from the pipe written) to remove: the
// handler only reads these slots and unlinks. A run has a few outputs at a
// time; past the slots, a temporary is not tracked (as before, it stays if the
// run is killed).
std::atomic<const char*> pending[16];

void RemovePendingAndDie(int signal) {
  for (auto& slot : pending) {
    const char* path = slot.load();
    if (path != nullptr) unlink(path);
  }
  // The handler was reset on entry (SA_RESETHAND): raised again, the
  // signal ends the process with its usual status once this returns.
  raise(signal);
}

// Installed once, for the signals whose default ends the process; one that
// is ignored (nohup's SIGHUP) or handled by an embedding program stays so.
void InstallSignalHandlers() {
  static const bool installed = [] {
    for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
      struct sigaction current;
      if (sigaction(signal, nullptr, &current) != 0 ||
          current.sa_handler != SIG_DFL) {
        continue;
      }
      struct sigaction action = {};
      action.sa_handler = RemovePendingAndDie;
      action.sa_flags = SA_RESETHAND;
      sigemptyset(&action.sa_mask);
      sigaction(signal, &action, nullptr);
    }
    return true;
  }();
  (void)installed;
}

void Track(const char* path) {
  for (auto& slot : pending) {
    const char* empty = nullptr;
    if (slot.compare_exchange_strong(empty, path)) return;
  }
}

void Untrack(const char* path) {
  for (auto& slot : pending) {
    const char* mine = path;
    if (slot.compare_exchange_strong(mine, nullptr)) return;
  }
}

}  // namespace

OutputFile::~OutputFile() {
  if (in_place() || committed_) return;
  Untrack(written_.c_str());
  std::remove(written_.c_str());
}

Status OutputFile::Begin(const std::string& path) {
  path_ = path;
  std::string target;  // the file the rename replaces
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) return CannotWrite(path);  // a link loop, EACCES
    // Absent: created beside it. A dangling symlink: its target is
    // created, as a shell's redirection and cp do, not the link replaced by
    // a file (stat said the chain ends; the bound holds if it changes).
    std::filesystem::path link = path;
    std::error_code error;
    for (int links = 0; std::filesystem::is_symlink(link, error); ++links) {
      if (links == 40) {
        errno = ELOOP;
        return CannotWrite(path);
      }
      const std::filesystem::path next =
          std::filesystem::read_symlink(link, error);
      if (error) {
        return Status(StatusCode::kIoError,
                      "cannot write '" + path + "': " + error.message());
      }
      link = next.is_absolute() ? next : link.parent_path() / next;
    }
    target = link.string();
  } else {
    if (S_ISDIR(st.st_mode)) {
      return Status(StatusCode::kIoError,
                    "cannot write '" + path + "': it is a directory");
    }
    if (!S_ISREG(st.st_mode)) {  // a device or pipe: written in place
      written_ = path;
      return Status::Ok();
    }
    if (access(path.c_str(), W_OK) != 0) return CannotWrite(path);
    // A symlink's target is what the rename replaces.
    std::unique_ptr<char, decltype(&std::free)> resolved(
        realpath(path.c_str(), nullptr), &std::free);
    if (resolved == nullptr) return CannotWrite(path);
    target = resolved.get();
  }
  std::string temporary = target + kTemporarySuffix;
  const int fd = mkstemp(temporary.data());
  if (fd < 0) {
    // Where the path itself exists (a file of /proc), the error is about
    // the file made beside it.
    const int error = errno;
    const bool exists = stat(path.c_str(), &st) == 0;
    errno = error;
    if (!exists) return CannotWrite(path);
    return Status(StatusCode::kIoError,
                  "cannot write '" + path + "': cannot create '" + target +
                      kTemporarySuffix +
                      "' beside it to replace it: " + std::strerror(error));
  }
  const bool moded = fchmod(fd, NewFileMode()) == 0;
  const int error = errno;
  close(fd);
  if (!moded) {
    std::remove(temporary.c_str());
    errno = error;
    return CannotWrite(path);
  }
  replaced_ = target;
  written_ = temporary;
  InstallSignalHandlers();
  Track(written_.c_str());
  return Status::Ok();
}

Status OutputFile::Commit() {
  if (in_place() || committed_) return Status::Ok();
  if (std::rename(written_.c_str(), replaced_.c_str()) != 0) {
    return CannotWrite(path_);
  }
  Untrack(written_.c_str());  // a signal now finds no file of that name
  committed_ = true;
  return Status::Ok();
}

Status CheckWritable(const std::string& path) {
  OutputFile output;  // its temporary is removed on return
  return output.Begin(path);
}

Status CheckOutputsApart(
    const std::vector<std::string>& outputs,
    const std::vector<std::pair<std::string, std::string>>& inputs) {
  // Files that exist are compared by identity (device and inode), so that
  // another spelling or a link of the same file counts; outputs that do
  // not exist yet by their absolute, normalised paths.
  auto same = [](const std::string& a, const std::string& b) {
    if (a.empty() || b.empty()) return false;
    struct stat sa, sb;
    if (stat(a.c_str(), &sa) == 0 && stat(b.c_str(), &sb) == 0) {
      return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino &&
             S_ISREG(sa.st_mode);
    }
    // weakly_canonical keeps a relative path relative where its first part
    // does not exist: made absolute first. Paths it cannot resolve (too
    // long, a link loop) are not taken for the same file.
    std::error_code error_a, error_b;
    const auto canonical_a = std::filesystem::weakly_canonical(
        std::filesystem::absolute(a, error_a), error_a);
    const auto canonical_b = std::filesystem::weakly_canonical(
        std::filesystem::absolute(b, error_b), error_b);
    return !error_a && !error_b && !canonical_a.empty() &&
           canonical_a == canonical_b;
  };
  for (size_t i = 0; i < outputs.size(); ++i) {
    for (const auto& [what, path] : inputs) {
      if (same(outputs[i], path)) {
        return Status(StatusCode::kInvalidArgument,
                      "the output '" + outputs[i] + "' is " + what +
                          "; write it elsewhere");
      }
    }
    for (size_t j = 0; j < i; ++j) {
      if (same(outputs[i], outputs[j])) {
        return Status(StatusCode::kInvalidArgument,
                      "two outputs are the same file, '" + outputs[j] +
                          "' and '" + outputs[i] + "'");
      }
    }
  }
  return Status::Ok();
}

}  // namespace tarn::cli
