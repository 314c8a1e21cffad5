// Passkeys (WebAuthn) on our pages, with django-allauth's scripts (mfa/js/webauthn.js):
// "Sign in with a passkey" on the sign-in pages, and a plain message whenever the browser's
// passkey step fails or is cancelled (allauth only logs it to the console).
(function () {
  'use strict'

  // Read when said, not when this script runs: on the sign-in pages it runs as the page is
  // read, before the deferred catalogue of translations (base.html) has run.
  function gettext (text) {
    return window.gettext ? window.gettext(text) : text
  }
  function interpolate (text, values) {
    return window.interpolate ? window.interpolate(text, values, true) : text.replace(/%\((\w+)\)s/g, function (m, key) { return values[key] })
  }

  var SAID = {
    NotAllowedError: function () { return gettext('No passkey was used: the request was cancelled, timed out, or this device has no passkey for this site.') },
    InvalidStateError: function () { return gettext('This security key or passkey is already registered to your account.') },
    SecurityError: function () { return gettext('Passkeys need this site at a secure address by its name: https, or http://localhost (not an IP address such as 127.0.0.1).') },
    NotSupportedError: function () { return gettext('This browser or device cannot use passkeys here.') }
  }

  function say (text) {
    var box = document.getElementById('passkey-error')
    if (!box) {
      box = document.createElement('p')
      box.id = 'passkey-error'
      box.className = 'message message-error'
      box.setAttribute('role', 'alert')
      var main = document.querySelector('.auth-card, main, body')
      main.insertBefore(box, main.firstChild)
    }
    box.textContent = text
    box.hidden = false
  }

  document.addEventListener('allauth.error', function (event) {
    var tags = (event.detail && event.detail.tags) || []
    if (tags.indexOf('webauthn') === -1) return
    event.preventDefault()
    var exception = event.detail.exception || {}
    say(SAID[exception.name] ? SAID[exception.name]() : interpolate(gettext('The passkey step did not work: %(reason)s.'), { reason: exception.message || gettext('try again') }))
  })

  document.addEventListener('DOMContentLoaded', function () {
    var button = document.getElementById('passkey-sign-in')
    if (!button) return
    if (!window.PublicKeyCredential || !window.allauth || !window.allauth.webauthn) {
      button.disabled = true
      button.title = SAID.NotSupportedError()
      return
    }
    window.allauth.webauthn.forms.loginForm({
      ids: { login: 'passkey-sign-in', credential: 'passkey-credential' }
    })
  })
})()
