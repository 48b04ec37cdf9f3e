#!/usr/bin/env bash
# The REST sequence of "Deep Learning Model Training – A First-Time User's Experience with
# Determined – Part 1" (HPE Developer blog, 2022; seed 000), verbatim: only the blog's placeholders
# are replaced by environment variables.
#
#   detMaster            master URL (the blog's http://gateway2.<mydomain.name>:13047)
#   ADMIN_PASSWORD       <MyPassword>     admin's password (blank by default)
#   USER_PASSWORD        <UserPassword>   password testuser1 is created with
#   NEW_USER_PASSWORD    <userPassword>   password then set for testuser1
#
# Note what the blog's commands rely on: the token is cut out of the raw `curl -i` output by
# grep/awk/cut (compact JSON with "token" first and no "token" in any header); the create-user
# request has no Content-Type header (curl sends application/x-www-form-urlencoded) and a raw,
# unhashed password; the new password is posted as a bare JSON string.
set -u
: "${detMaster:?set detMaster to the master URL}"
ADMIN_PASSWORD=${ADMIN_PASSWORD-}
USER_PASSWORD=${USER_PASSWORD:?}
NEW_USER_PASSWORD=${NEW_USER_PASSWORD:?}

# Authenticate as admin user and get the authentication token for subsequent calls:
token=$(curl -i -s -X 'POST' \
  "${detMaster}/api/v1/auth/login" \
  -H 'accept: application/json' \
  -H 'Content-Type: application/json' \
  -d '{
  "username": "admin",
  "password": "'"${ADMIN_PASSWORD}"'"
}' | grep token | awk '{print $1}' | tr -d '\r')

# Extract token value and remove trailing quotes 
MyToken=$(echo $token | cut -d':' -f 2 | cut -d',' -f 1 | tr -d '"') 

# Create a new user account “testuser1”
curl -X 'POST' \
  "${detMaster}/api/v1/users" \
  -H 'accept: application/json' \
  -H "Authorization: Bearer $MyToken" \
  -d '{
  "user": {
    "username": "testuser1",
    "admin": false,
    "active": true
   },
   "password": "'"${USER_PASSWORD}"'"
}'

# Fetch the user ID for user "testuser1"
detUserId=$(curl -s -X 'GET' \
  "${detMaster}/api/v1/users" \
  -H 'accept: application/json' \
  -H "Authorization: Bearer $MyToken"| jq '.users[] | select(.username=="testuser1") | .id' | tr -d '"')
echo " the determined AI user ID for user testuser1 is : $detUserId"

# Set password for the user account “testuser1”
curl -X 'POST' \
"${detMaster}/api/v1/users/${detUserId}/password" \
  -H 'accept: application/json' \
  -H 'Content-Type: application/json' \
  -H "Authorization: Bearer $MyToken" \
  -d '"'"${NEW_USER_PASSWORD}"'"'

# (Not in the blog: a diagnostic line for the test that runs this script.)
echo
if [ -n "$MyToken" ]; then extracted="yes (${#MyToken} chars)"; else extracted=NO; fi
echo "seed000: token extracted: $extracted; testuser1 id: ${detUserId:-NONE}"
