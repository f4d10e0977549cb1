/**
 * systemd socket activation (sd_listen_fds(3)): a unit's `.socket` hands the started service its
 * listening sockets from fd 3 on, says how many in `LISTEN_FDS` and for which process in
 * `LISTEN_PID` (so a child that inherits the environment does not take them for its own).
 */
export const SD_LISTEN_FDS_START = 3;

/** The fd of the socket systemd passed this process, or null when none was. Clears the variables, as sd_listen_fds does. */
export function activationFd(env: NodeJS.ProcessEnv = process.env, pid: number = process.pid): number | null {
  const fds = Number(env.LISTEN_FDS);
  const forUs = env.LISTEN_PID !== undefined && Number(env.LISTEN_PID) === pid;
  delete env.LISTEN_FDS;
  delete env.LISTEN_PID;
  delete env.LISTEN_FDNAMES;
  return forUs && Number.isInteger(fds) && fds >= 1 ? SD_LISTEN_FDS_START : null;
}
