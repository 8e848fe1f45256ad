# Installs the `dryft` CLI into bin\ beside this script, from the Dryft hub you point it at:
#
#   .\install-dryft.ps1                              # $env:DRYFT_API_URL, else the hub dryft.json names, else http://localhost:3000
#   .\install-dryft.ps1 https://dryft.example.org
#
# It downloads the CLI (one JavaScript file) and its sha256 from the hub
# (GET /api/cli/dryft.cjs and /api/cli/dryft.cjs.sha256), checks the file against the checksum,
# and only then puts bin\dryft.cjs and the launchers bin\dryft.cmd and bin\dryft.ps1 in place,
# so `.\bin\dryft doctor` works in PowerShell and cmd. A download whose checksum differs is deleted
# and nothing is installed. Node.js 20 or newer is the only requirement.
# Written for Windows PowerShell 5.1 and PowerShell 7; not yet tested on Windows by the Dryft team.
param([string]$Hub = '')
$ErrorActionPreference = 'Stop'
# The hub: the argument, else $env:DRYFT_API_URL, else the hub this copy came from (the "hub" that a
# template downloaded from a hub carries in dryft.json), else http://localhost:3000.
if (-not $Hub) { $Hub = $env:DRYFT_API_URL }
if (-not $Hub) {
  try { $Hub = (Get-Content -Raw -Path (Join-Path $PSScriptRoot 'dryft.json') | ConvertFrom-Json).hub } catch { $Hub = '' }
}
if (-not $Hub) { $Hub = 'http://localhost:3000' }

function Fail([string]$Message) {
  Write-Host "install-dryft: $Message" -ForegroundColor Red
  exit 1
}

$Hub = $Hub.TrimEnd('/')
if ($Hub -notmatch '^https?://') { Fail "the hub must be an http(s) URL such as https://dryft.example.org (got `"$Hub`")." }

$node = Get-Command node -ErrorAction SilentlyContinue
if (-not $node) {
  Fail 'Node.js is not installed (or not on PATH). Install Node.js 20 or newer from https://nodejs.org, then run .\install-dryft.ps1 again. Without it you can still upload archives in the browser.'
}
$major = 0
[void][int]::TryParse((& node -p "process.versions.node.split('.')[0]"), [ref]$major)
if ($major -lt 20) { Fail "the dryft CLI needs Node.js 20 or newer; this node is $(& node --version). Upgrade Node.js, then run .\install-dryft.ps1 again." }

$dest = if ($env:DRYFT_INSTALL_DIR) { $env:DRYFT_INSTALL_DIR } else { Join-Path $PSScriptRoot 'bin' }
New-Item -ItemType Directory -Force -Path $dest | Out-Null
$tmp = Join-Path $dest ".dryft-download.$PID"

try {
  Write-Host "Downloading the dryft CLI from $Hub ..."
  try {
    $sumText = (Invoke-WebRequest -UseBasicParsing -Uri "$Hub/api/cli/dryft.cjs.sha256").Content
    if ($sumText -is [byte[]]) { $sumText = [System.Text.Encoding]::UTF8.GetString($sumText) }
    Invoke-WebRequest -UseBasicParsing -Uri "$Hub/api/cli/dryft.cjs" -OutFile $tmp
  } catch {
    Fail "could not download the CLI from $Hub ($($_.Exception.Message)). Check the address (is the hub up? try $Hub/api/health) and your network."
  }
  if ($sumText -notmatch '^\s*([0-9a-fA-F]{64})') { Fail "the hub's checksum file is not a sha256 line; nothing was installed." }
  $expected = $Matches[1].ToLowerInvariant()
  $actual = (Get-FileHash -Algorithm SHA256 -Path $tmp).Hash.ToLowerInvariant()
  if ($actual -ne $expected) {
    Fail "checksum mismatch: the downloaded CLI has sha256 $actual but the hub published $expected. The download was corrupted or altered on the way; it was deleted and nothing was installed. Try again, and tell the event organizer if it persists."
  }
  Move-Item -Force -Path $tmp -Destination (Join-Path $dest 'dryft.cjs')
} finally {
  if (Test-Path $tmp) { Remove-Item -Force $tmp }
}

# Launchers: the hub this came from is the default DRYFT_API_URL.
$cmd = @"
@echo off
rem Installed by install-dryft.ps1 from $Hub (sha256 $expected). Reinstall with .\install-dryft.ps1.
if not defined DRYFT_API_URL set "DRYFT_API_URL=$Hub"
node "%~dp0dryft.cjs" %*
"@
Set-Content -Path (Join-Path $dest 'dryft.cmd') -Value $cmd -Encoding Ascii
$ps1 = @"
# Installed by install-dryft.ps1 from $Hub (sha256 $expected). Reinstall with .\install-dryft.ps1.
`$setHere = -not `$env:DRYFT_API_URL
if (`$setHere) { `$env:DRYFT_API_URL = '$Hub' }
try { & node (Join-Path `$PSScriptRoot 'dryft.cjs') @args } finally { if (`$setHere) { Remove-Item Env:DRYFT_API_URL } }
exit `$LASTEXITCODE
"@
Set-Content -Path (Join-Path $dest 'dryft.ps1') -Value $ps1 -Encoding UTF8
# The hub, recorded for the research loop (agent/research.py) so that it talks to the same hub.
Set-Content -Path (Join-Path $dest 'dryft-hub.txt') -Value $Hub -Encoding Ascii

$version = & node (Join-Path $dest 'dryft.cjs') --version
if ($LASTEXITCODE -ne 0) { Fail 'bin\dryft.cjs was installed but does not run with this node; check your Node.js installation.' }
Write-Host "Installed dryft $version in $dest (sha256 $expected verified)."
Write-Host 'Next: $env:DRYFT_TOKEN = "dryft_pat_..." (a team API token; never commit it), then .\bin\dryft doctor'
